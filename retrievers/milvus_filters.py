"""Metadata filters as Milvus boolean expressions, built from escaped literals (never pasted text).

Milvus Lite has no filter templating (``{name}`` placeholders), so every value goes through
:func:`literal`: a double-quoted string whose only escapes are those both Milvus Lite and the Milvus
server read (``\\\\ \\" \\n \\r \\t``). Numbers are formatted by Python, never taken from input text.

Semantics match the local index (``DocStore.allowed_mask``): ``source`` is an SQLite-style glob resolved
against the store's known sources, ``equals`` compares the text form of a value (``_as_text``), and a
key that is not a plain chunk column is looked up in the free-form metadata.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable

from core.access import ACCESS_KEY
from core.chunks import Filters

# Chunk columns stored as scalar fields (compared directly); everything else lives in ``meta_text``.
STRING_COLUMNS = ("id", "source", "title", "language", "content_hash")
INT_COLUMNS = ("chunk_index",)
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
NOTHING = "false"
ACCESS_FIELD = "access_key"  # an expression no row satisfies (a glob that matches no source)


class FilterValueError(ValueError):
    """A filter value Milvus cannot carry (a control character)."""


def literal(value: str) -> str:
    """A Milvus string literal holding exactly ``value``."""
    if _CONTROL_RE.search(value):
        raise FilterValueError(f"filter value {value!r} holds a control character; remove it")
    return '"' + "".join(_ESCAPES.get(ch, ch) for ch in value) + '"'


def number(value: float) -> str:
    if not math.isfinite(value):
        raise FilterValueError(f"filter value {value!r} is not a finite number")
    return repr(float(value))


def as_text(value: object) -> str:
    """A metadata value's text form, as SQLite's ``CAST(json_extract(...) AS TEXT)`` gives it locally."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, list | dict):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return str(value)


def meta_text(metadata: dict) -> dict[str, str]:
    """The ``meta_text`` JSON field: every non-null metadata value as text, for exact-match filters."""
    return {str(key): as_text(value) for key, value in metadata.items() if value is not None}


def glob_regex(pattern: str) -> re.Pattern[str]:
    """SQLite GLOB semantics: ``*`` any run, ``?`` one character, ``[...]``/``[^...]`` a class; case-sensitive."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        end = _class_end(pattern, i) if ch == "[" else -1
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif end > 0:
            body = pattern[i + 1 : end]
            negate = body.startswith("^")
            body = body[1:] if negate else body
            escaped = body.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
            out.append("[" + ("^" if negate else "") + escaped + "]")
            i = end
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start`` (a leading ``]`` is literal), or -1."""
    j = start + 1
    if pattern[j : j + 1] == "^":
        j += 1
    if pattern[j : j + 1] == "]":
        j += 1
    return pattern.find("]", j)


def source_pattern(source: str) -> str:
    """A plain source filter means "contains"; one with glob characters is used as written."""
    return source if any(c in source for c in "*?[") else f"*{source}*"


def access_key(groups: list[str]) -> str:
    """A document's groups as the ``access_key`` string field: ``|hex|hex|`` ("" for everyone).

    Hex-encoded so a group name can never hold ``like``'s wildcards (``_`` and ``%``, which Milvus Lite
    cannot escape): matching ``%|<hex>|%`` is then an exact test for one whole group.
    """
    return "|" + "|".join(g.encode().hex() for g in groups) + "|" if groups else ""


def access_expression(groups: list[str], *, field: bool = True) -> str:
    """Chunks without access groups, or sharing one of ``groups`` (core/access.py).

    ``field``: the collection has the ``access_key`` field; older collections are filtered on the JSON
    metadata (ingestion stores groups only when there are some: "no groups" is a missing key), which
    gives the same rows, slower.
    """
    if field:
        shared = [f'{ACCESS_FIELD} like "%|{g.encode().hex()}|%"' for g in groups]
        return " or ".join([f'{ACCESS_FIELD} == ""', *shared])
    public = f'not exists metadata["{ACCESS_KEY}"]'
    listed = ", ".join(literal(g) for g in groups)
    return f'{public} or json_contains_any(metadata["{ACCESS_KEY}"], [{listed}])' if groups else public


def to_expression(
    filters: Filters | None, sources: Callable[[], Iterable[str]], *, access_field: bool = False
) -> str:
    """The Milvus expression for ``filters`` ("" when there is nothing to filter).

    ``sources`` lists the store's distinct sources; it is called only when a source glob must be
    resolved (Milvus ``like`` has no escape for literal ``%``/``_`` in Milvus Lite, and no classes).
    """
    if filters is None or filters.is_empty():
        return ""
    clauses: list[str] = []
    if filters.source:
        regex = glob_regex(source_pattern(filters.source))
        matching = sorted(s for s in sources() if regex.fullmatch(s))
        if not matching:
            return NOTHING
        clauses.append("source in [" + ", ".join(literal(s) for s in matching) + "]")
    if filters.language:
        clauses.append(f"language == {literal(filters.language)}")
    if filters.modified_after:
        clauses.append(f"mtime >= {number(filters.modified_after.timestamp())}")
    if filters.modified_before:
        clauses.append(f"mtime <= {number(filters.modified_before.timestamp())}")
    for key, value in filters.equals.items():
        text = as_text(value)
        if key in STRING_COLUMNS:
            clauses.append(f"{key} == {literal(text)}")
        elif key in INT_COLUMNS:
            if not re.fullmatch(r"-?(?:0|[1-9]\d{0,17})", text):
                return NOTHING  # the local index compares text: a non-integer never equals an int column
            clauses.append(f"{key} == {int(text)}")
        else:
            clauses.append(f"meta_text[{literal(str(key))}] == {literal(text)}")
    if filters.access is not None:
        clauses.append(access_expression(filters.access, field=access_field))
    return " and ".join(f"({c})" for c in clauses)
