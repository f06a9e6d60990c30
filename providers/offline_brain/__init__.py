"""Deterministic zh/en rules (analysis, judging, rewriting, follow-ups, extractive answers): the bodies
of the offline roles in ``providers.brain``, the embedded default and the test workhorse."""
