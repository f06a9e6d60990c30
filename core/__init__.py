"""The project's shared vocabulary: data shapes, trace events and text utilities.

The bottom layer: it imports nothing of the project, so every other package may import it.
"""
