"""How webhooks are delivered (settings ``webhook_*``; design note 95)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    attempts: int = 8  # failures in a row before a channel is dead
    backoff: float = 1.0  # seconds before the first retry; doubled after each failure
    timeout: float = 5.0  # seconds per POST
    allow_private: bool = False  # sendTo on loopback or private addresses (tests)
