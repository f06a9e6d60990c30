"""Moved to ``providers/meaning.py`` (a service of both brains); kept for the importers not yet changed."""

from providers.meaning import Meaning, TextEmbedder

__all__ = ["Meaning", "TextEmbedder"]
