"""Which files an ingest run reads: folders walked, ``--include``/``--exclude`` globs applied, and the
files nobody can read counted, so a folder of unsupported files never looks like an empty success.
Folders that cannot be listed (permissions) are reported, never skipped silently."""

from __future__ import annotations

import os
from collections.abc import Iterable
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from ingestion.loaders import SKIPPED_DIR_NAMES, supported_suffixes


class SourceScan(BaseModel):
    files: list[Path] = Field(description="files to read, folders expanded in sorted order")
    unsupported: list[Path] = Field(default_factory=list, description="found while walking, no loader")
    excluded: list[Path] = Field(default_factory=list, description="files left out by --include/--exclude")
    unreadable: list[tuple[Path, str]] = Field(
        default_factory=list, description="folders that could not be listed, with the reason"
    )


def matches(relative: str, patterns: Iterable[str]) -> bool:
    """Whether a path (relative to the folder given, POSIX separators) matches any glob: by its whole
    relative path, its file name, or one of its folders (``build`` excludes ``build/a/b.md``)."""
    path = PurePosixPath(relative)
    folders = [str(PurePosixPath(*path.parts[: n + 1])) for n in range(len(path.parts) - 1)]
    candidates = [relative, path.name, *folders, *path.parts[:-1]]
    for pattern in patterns:
        pattern = pattern.removeprefix("./")
        variants = {pattern, pattern.removeprefix("**/")}
        if any(fnmatchcase(c, p) for c in candidates for p in variants):
            return True
    return False


def _wanted(relative: str, include: list[str], exclude: list[str]) -> bool:
    return (not include or matches(relative, include)) and not matches(relative, exclude)


def scan_sources(
    paths: Iterable[Path], include: Iterable[str] = (), exclude: Iterable[str] = ()
) -> SourceScan:
    """Expand folders (hidden ones, ``__pycache__`` and ``node_modules`` skipped) into the files to read.

    Files named explicitly are kept even when unsupported, so the run reports them with a reason.
    """
    include, exclude = list(include), list(exclude)
    supported = supported_suffixes()
    scan = SourceScan(files=[])
    for root in (Path(p) for p in paths):
        if not root.is_dir():
            if _wanted(root.name, include, exclude):
                scan.files.append(root)
            else:
                scan.excluded.append(root)
            continue
        found: list[Path] = []

        def unreadable(exc: OSError, root: Path = root) -> None:
            scan.unreadable.append(
                (Path(exc.filename or root), f"cannot read folder ({exc.strerror or exc})")
            )

        for folder, dirs, names in os.walk(root, onerror=unreadable):
            dirs[:] = [d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIR_NAMES]
            for name in (n for n in names if not n.startswith(".")):
                path = Path(folder) / name
                if not _wanted(path.relative_to(root).as_posix(), include, exclude):
                    scan.excluded.append(path)
                elif path.suffix.lower() in supported:
                    found.append(path)
                else:
                    scan.unsupported.append(path)
        scan.files.extend(sorted(found))
    scan.files = list(dict.fromkeys(scan.files))
    scan.unsupported.sort()
    return scan
