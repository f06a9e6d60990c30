"""Refuse a filter key that no chunk of the index holds, naming the keys it does hold.

``Filters.equals`` matches any chunk field or metadata key, so a misspelt key (``langauge=zh``) would
quietly match nothing. Custom metadata keys keep working: the check reads the keys the index holds.
"""

from __future__ import annotations

import difflib
import threading
import weakref
from typing import Any

from core.chunks import Chunk, Filters

# Keys Filters.from_pairs reads itself (source glob, language, modification dates).
SPECIAL_KEYS = ("source", "language", "lang", "after", "before", "modified_after", "modified_before")
FIELD_KEYS = tuple(name for name in Chunk.model_fields if name != "metadata")

_cache: weakref.WeakKeyDictionary[Any, frozenset[str]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


class UnknownFilterKeyError(ValueError):
    """A filter names a key no chunk of the index holds."""


def metadata_keys(store: Any) -> frozenset[str]:
    """The metadata keys the store's chunks hold: read once per opened store (an index generation)."""
    with _lock:
        if store in _cache:
            return _cache[store]
    docstore = getattr(store, "docstore", None)
    if docstore is not None and hasattr(docstore, "metadata_keys"):
        keys = frozenset(docstore.metadata_keys())
    else:
        keys = frozenset(key for chunk in store.iter_chunks() for key in chunk.metadata)
    with _lock:
        _cache[store] = keys
    return keys


def filter_keys(store: Any) -> list[str]:
    """Every key a filter may use on this store, sorted: the special ones, chunk fields, metadata keys."""
    return sorted({*SPECIAL_KEYS, *FIELD_KEYS, *metadata_keys(store)})


def unknown_keys(store: Any, filters: Filters | None) -> list[str]:
    if filters is None or not filters.equals:
        return []
    held = {*FIELD_KEYS, *metadata_keys(store)}
    return [key for key in filters.equals if key not in held]


def require_known_keys(store: Any, filters: Filters | None) -> None:
    """Raise ``UnknownFilterKeyError`` when a filter key is held by no chunk, listing the held keys."""
    unknown = unknown_keys(store, filters)
    if not unknown:
        return
    keys = filter_keys(store)
    close = difflib.get_close_matches(unknown[0], keys, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise UnknownFilterKeyError(
        f"no chunk of this index has the filter key {', '.join(map(repr, unknown))}{hint} "
        f"(keys it holds: {', '.join(keys)})"
    )
