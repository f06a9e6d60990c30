"""Bytes to text for every parser: a byte-order mark, UTF-8, a declared charset, or a detected legacy
encoding; binary content is refused with a ``LoaderError`` a user can act on."""

from __future__ import annotations

from ingestion.chinese_bytes import looks_like_gbk
from ingestion.documents import LoaderError

# A decoded text with more than this share of control characters is treated as binary.
MAX_CONTROL_RATIO = 0.10

_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8-sig"),
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)


# Legacy encodings a non-UTF-8 file may use, in order of preference when the detector finds several
# equally plausible (short texts): Chinese first, then Western European, then the rest.
LEGACY_ENCODINGS: tuple[str, ...] = ("gb18030", "big5", "cp1252", "shift_jis", "euc_kr", "cp1251")


def decode_text(data: bytes, *, declared: str | None = None) -> str:
    """Decode bytes as text: BOM, then UTF-8, then a declared charset, then a detected legacy encoding.

    Detection (charset-normalizer, limited to ``LEGACY_ENCODINGS``) tells Western European cp1252 text
    from GBK Chinese: decoding first with GB18030, which accepts almost any byte string, turned
    "Der Bär läuft" into "Der B鋜 l鋟ft". Binary content (NUL bytes outside a UTF-16/32 file, or many
    control characters) is rejected rather than indexed as garbage.
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError:
                raise LoaderError(f"not valid {codec.upper()} text despite its byte-order mark") from None
            return _checked_text(text)
    if b"\x00" in data:
        raise LoaderError("binary file (NUL bytes)")
    # GBK Chinese the detector misses or mistakes for Shift-JIS/Big5 (ingestion/chinese_bytes.py)
    gbk = ["gb18030"] if not _is_utf8(data) and looks_like_gbk(data) else []
    codecs = ["utf-8"] + ([declared] if declared else []) + gbk + _detected_encodings(data)
    for codec in dict.fromkeys(codecs):
        try:
            return _checked_text(data.decode(codec))
        except (UnicodeDecodeError, LookupError):
            continue
    raise LoaderError("not valid UTF-8 text and no known encoding fits; save the file as UTF-8")


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _detected_encodings(data: bytes) -> list[str]:
    """Plausible legacy encodings, best first; ties broken by the order of ``LEGACY_ENCODINGS``."""
    from charset_normalizer import from_bytes

    matches = list(from_bytes(data, cp_isolation=list(LEGACY_ENCODINGS)))
    rank = {name: i for i, name in enumerate(LEGACY_ENCODINGS)}
    matches.sort(key=lambda m: (round(m.chaos, 3), -round(m.coherence, 3), rank.get(m.encoding, 99)))
    return [m.encoding for m in matches]


def _checked_text(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    if not text.strip():
        raise LoaderError("empty file")
    sample = text[:65536]
    controls = sum(1 for ch in sample if (ord(ch) < 32 and ch not in "\t\n\f\v") or ord(ch) == 127)
    if controls > MAX_CONTROL_RATIO * len(sample):
        raise LoaderError(f"binary file ({controls / len(sample):.0%} control characters)")
    return text
