"""Answerability (issue 21): whether the evidence answers the question, as a fitted, calibrated decision.

``signals`` computes the named signals, ``model`` combines them (weights in ``answerability.json``),
``gate`` applies the decision to any judge's verdict (offline or LLM).
"""
