"""A pydantic model kept in a JSON data file beside the code that reads it: fitted weights, tuned
numbers, with an ``_about`` line saying what wrote the file (keys starting with "_" are comments).

Serialisable like a Haystack component (``to_dict`` / ``from_dict``); ``load`` turns a missing or
malformed file into one ``ValueError`` naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel


class DataFile(BaseModel):
    """Subclasses name their ``FILE``, what the file is (``LABEL``, for errors) and its ``ABOUT`` line."""

    FILE: ClassVar[Path]
    LABEL: ClassVar[str] = "data file"
    ABOUT: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls.model_validate({k: v for k, v in data.items() if not k.startswith("_")})

    @classmethod
    def load(cls, path: Path | None = None) -> Self:
        path = path or cls.FILE
        try:
            return cls.from_dict(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{cls.LABEL} {path}: {exc}") from exc

    def save(self, path: Path | None = None) -> None:
        text = json.dumps({"_about": self.ABOUT, **self.to_dict()}, ensure_ascii=False, indent=2) + "\n"
        (path or self.FILE).write_text(text, encoding="utf-8")
