"""Count what an embedder's real model is run on, without standing in for the model."""

from __future__ import annotations

from typing import Any

import numpy as np


def queries_encoded(embedder: Any) -> list[str]:
    """The query texts the embedder's model encodes from now on (its ``_encode``, wrapped on this instance)."""
    seen: list[str] = []
    encode = embedder._encode

    def counting(texts: list[str], *, is_query: bool) -> np.ndarray:
        if is_query:
            seen.extend(texts)
        return encode(texts, is_query=is_query)

    embedder._encode = counting
    return seen
