"""Tolerant parsing of the JSON that chat models actually write.

Small and local models wrap JSON in ```json fences, add prose around it, use Python literals and
single quotes, leave trailing commas or stop mid-object when they hit the token limit. This module
recovers a schema-valid object from such replies when the intent is unambiguous, and raises one clear
``ValueError`` when it is not, so callers can fall back instead of crashing.
"""

from __future__ import annotations

import json
import re
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)

_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"```[ \t]*(?:json|javascript|js|python)?[ \t]*\n?(.*?)(?:```|$)", re.DOTALL | re.I)
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER_RE = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_LITERALS = {"true": "true", "false": "false", "null": "null", "True": "true", "False": "false"}
_LITERALS |= {"None": "null", "NaN": "null", "Infinity": "null", "undefined": "null"}
_MAX_STARTS = 20  # candidate '{' / '[' positions tried in prose-heavy replies
_MAX_CUTS = 8  # how far back a truncated reply may be cut to a clean element boundary


def parse_model_json(text: str, schema: type[M]) -> M:
    """Parse a model reply into ``schema``, repairing common JSON mistakes.

    Raises ``ValueError`` naming the schema and quoting the reply's start when nothing usable is found.
    """
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"cannot parse {schema.__name__}: the model reply is empty")
    problems: list[str] = []
    for candidate in _candidates(text):
        try:
            data = loads_tolerant(candidate)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        try:
            return _validate(_reshape(data, schema), schema)
        except ValueError as exc:
            problems.append(str(exc))
    reason = problems[0] if problems else "no JSON object found"
    preview = text.strip().replace("\n", " ")[:160]
    raise ValueError(f"cannot parse {schema.__name__} from the model reply ({reason}); reply: {preview!r}")


def loads_tolerant(text: str) -> Any:
    """Decode one JSON value from ``text`` (which starts at '{' or '['), repairing it if needed."""
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        pass
    repaired, stack, cuts = _repair(text)
    closers = "".join(reversed(stack))
    attempts = [repaired + closers]
    if stack:
        stripped = repaired.rstrip().rstrip(",").rstrip()
        attempts.append(stripped + closers)
        if stripped.endswith(":"):
            attempts.append(stripped + " null" + closers)
        attempts += [repaired[:pos] + "".join(reversed(open_)) for pos, open_ in reversed(cuts[-_MAX_CUTS:])]
    for attempt in attempts:
        try:
            return json.loads(attempt, strict=False)
        except json.JSONDecodeError:
            continue
    raise ValueError("malformed JSON that could not be repaired")


def _candidates(text: str) -> list[str]:
    """JSON-looking substrings, most likely first: fenced blocks, then each '{' or '[' start."""
    body = _THINK_RE.sub("", text)
    if re.match(r"\s*<think>", body, re.I):  # an unclosed reasoning block holds no answer
        body = body.split("</think>")[-1]
    blocks = [m.group(1) for m in _FENCE_RE.finditer(body) if m.group(1).strip()]
    out: list[str] = []
    for source in [*blocks, body]:
        starts = [i for i, ch in enumerate(source) if ch in "{["][:_MAX_STARTS]
        out += [source[i:] for i in starts]
    return out


def _repair(src: str) -> tuple[str, list[str], list[tuple[int, list[str]]]]:
    """Rewrite near-JSON into JSON; return the text, the unclosed brackets and safe cut points.

    A cut point is an output position just before a comma, where dropping the rest and closing the
    open brackets still yields valid JSON (used for replies truncated mid-element).
    """
    out: list[str] = []
    stack: list[str] = []
    cuts: list[tuple[int, list[str]]] = []
    i, n = 0, len(src)
    while i < n:
        ch = src[i]
        if ch in "\"'":
            literal, i = _read_string(src, i)
            out.append(literal)
            continue
        if ch in "{[":
            stack.append("}" if ch == "{" else "]")
            out.append(ch)
        elif ch in "}]":
            _drop_trailing_comma(out)
            if not stack:
                break
            out.append(stack.pop())
            if not stack:
                break
        elif ch == ",":
            cuts.append((len("".join(out)), list(stack)))
            out.append(ch)
        elif ch == "#" or src.startswith("//", i):
            end = src.find("\n", i)
            i = n if end < 0 else end
            continue
        elif ch.isdigit() or (ch in "-." and i + 1 < n and src[i + 1].isdigit()):
            number = _NUMBER_RE.match(src, i)
            token = number.group(0) if number else ch
            out.append(token)
            i += len(token)
            continue
        elif ch.isalpha() or ch == "_":
            word = _WORD_RE.match(src, i)
            token = word.group(0) if word else ch
            i += len(token)
            is_key = src[i:].lstrip().startswith(":")
            out.append(json.dumps(token) if is_key else _LITERALS.get(token, json.dumps(token)))
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out), stack, cuts


def _read_string(src: str, start: int) -> tuple[str, int]:
    """Read a single- or double-quoted string at ``start``; return it as a JSON literal and the end."""
    quote = src[start]
    chars: list[str] = []
    i = start + 1
    while i < len(src):
        ch = src[i]
        if ch == "\\" and i + 1 < len(src):
            nxt = src[i + 1]
            chars.append("'" if nxt == "'" else ch + nxt)
            i += 2
            continue
        if ch == quote:
            i += 1
            break
        chars.append('\\"' if ch == '"' else ch)
        i += 1
    return '"' + "".join(chars) + '"', i


def _drop_trailing_comma(out: list[str]) -> None:
    while out and out[-1].isspace():
        out.pop()
    if out and out[-1] == ",":
        out.pop()


def _reshape(data: Any, schema: type[BaseModel]) -> Any:
    """Undo common wrappings: [obj], {"SchemaName": obj}, {"arguments": obj}, or a bare list."""
    fields = schema.model_fields
    if isinstance(data, list):
        list_fields = [name for name, f in fields.items() if typing.get_origin(f.annotation) is list]
        if len(data) == 1 and isinstance(data[0], dict):
            return _reshape(data[0], schema)
        if len(list_fields) == 1:
            return {list_fields[0]: data}
    if isinstance(data, dict) and data and not any(key in fields for key in data):
        inner = [value for value in data.values() if isinstance(value, dict)]
        if len(inner) == 1:
            return inner[0]
    return data


def _validate(data: Any, schema: type[M]) -> M:
    """Validate, giving enum-like strings ('Multi-Hop', ' factual ') one normalised second chance."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    fields = schema.model_fields
    if not any(key in fields for key in data):
        raise ValueError(f"none of the expected fields ({', '.join(fields)}) is present")
    # null for a field that has a default means "not given" (Python-style None from weak models)
    data = {k: v for k, v in data.items() if not (v is None and k in fields and not fields[k].is_required())}
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        fixed = _normalise_literals(data, exc)
        if fixed is not None:
            try:
                return schema.model_validate(fixed)
            except ValidationError as again:
                exc = again
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "object"
        raise ValueError(f"{exc.error_count()} invalid field(s), first {where}: {first['msg']}") from None


def _normalise_literals(data: dict[str, Any], exc: ValidationError) -> dict[str, Any] | None:
    fixed = json.loads(json.dumps(data))
    changed = False
    for error in exc.errors():
        if error["type"] != "literal_error" or not isinstance(error.get("input"), str):
            continue
        parent: Any = fixed
        for part in error["loc"][:-1]:
            parent = parent[part]
        value = re.sub(r"[\s\-]+", "_", error["input"].strip().lower())
        parent[error["loc"][-1]] = value
        changed = True
    return fixed if changed else None
