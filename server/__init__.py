"""Podviews service: HTTP API, settings, CLI, worker and executors."""
