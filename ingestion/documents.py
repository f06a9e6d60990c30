"""Data types that flow from a file on disk to text pieces ready for indexing.

A loader turns a file into a ``LoadedDocument``: an ordered list of structural ``Block`` s. The
document's *full text* is defined as the block texts joined by a blank line (``"\\n\\n"``); every
character offset in a ``TextPiece`` refers to that string, so a piece can always be located again in
its document (for highlighting, citations or re-splitting).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

BLOCK_SEPARATOR = "\n\n"

BlockKind = Literal["heading", "paragraph", "table", "code", "list"]


class Block(BaseModel):
    """A structural unit of a document: a heading, a paragraph, a whole table, a code block or a list.

    ``text`` is already normalised (no leading/trailing whitespace); tables are Markdown tables whose
    first line is the header row and second line the ``| --- |`` separator.
    """

    kind: BlockKind
    text: str
    level: int = Field(default=0, ge=0, le=6, description="1..6 for headings, 0 otherwise")


class LoadedDocument(BaseModel):
    """One source file, parsed into blocks, with what incremental ingestion needs to detect changes."""

    source: str = Field(description="absolute path of the file")
    title: str
    blocks: list[Block]
    mtime: float
    file_hash: str = Field(description="sha256 hex digest of the raw bytes")
    size: int = Field(description="size of the raw file in bytes")
    access: list[str] = Field(
        default_factory=list, description="groups that may read it (front matter); empty: the run's, or all"
    )

    def full_text(self) -> str:
        """The document as one string: block texts joined by ``"\\n\\n"``. Piece spans index into it."""
        return BLOCK_SEPARATOR.join(block.text for block in self.blocks)

    def block_offsets(self) -> list[int]:
        """Start offset of each block inside ``full_text()``."""
        offsets: list[int] = []
        position = 0
        for block in self.blocks:
            offsets.append(position)
            position += len(block.text) + len(BLOCK_SEPARATOR)
        return offsets


class TextPiece(BaseModel):
    """A chunk of a document as the splitter returns it.

    Spans: ``doc.full_text()[char_start:char_end] == text`` for every piece except the later parts of a
    table that was too large for one chunk, which repeat the table's header row and separator in front of
    their rows (their span covers only their own rows), and a piece that starts or ends inside a fenced
    code block, which opens with the block's fence line or closes it (``splitter.closed_fences``). Overlap between consecutive pieces shows up as
    overlapping spans: the next piece's span starts inside the previous one (on a sentence boundary), so
    the shared text is ``full_text[next.char_start:prev.char_end]``.
    """

    text: str
    heading_path: list[str] = Field(default_factory=list)
    char_start: int
    char_end: int
    kind: Literal["text", "table"] = "text"


class LoaderError(Exception):
    """A file that cannot be turned into text, with a reason a user can act on."""

    def __init__(self, reason: str, path: str | None = None) -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{path}: {reason}" if path else reason)
