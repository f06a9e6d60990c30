"""Deterministic offline brain (zh/en rules, extractive answers): the embedded default and test workhorse."""

from providers.offline_brain.brain import OfflineBrain

__all__ = ["OfflineBrain"]
