"""Where the shared reference data lives: ``../shared/data`` beside the
checkout (the W3C suite, BSBM)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
W3C = DATA / "w3c-sparql11"
BSBM = DATA / "bsbm"
