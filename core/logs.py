"""Log lines that cannot be forged or garbled by the names they quote.

File names, questions and document text reach log messages; a newline in a file name would forge a
second log line and an escape sequence would recolour, retitle or hide the terminal's text. The
formatter escapes them in the message (never in a traceback, whose newlines are its own).
"""

from __future__ import annotations

import logging

# Bidirectional overrides and isolates reorder what a terminal shows (U+202E makes "exe.txt" read
# "txt.exe"); C0/C1 controls move the cursor, retitle windows or hide text.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
CONTROL_CODES = [*range(0x00, 0x20), *range(0x7F, 0xA0), *map(ord, BIDI_CONTROLS)]
_ESCAPES = {
    code: {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(
        chr(code), f"\\u{code:04x}" if code > 0xFF else f"\\x{code:02x}"
    )
    for code in CONTROL_CODES
}


def escape_controls(text: object) -> str:
    """``text`` on one line: newlines, tabs and control or bidi characters written as escapes."""
    return str(text).translate(_ESCAPES)


class EscapingFormatter(logging.Formatter):
    """A ``logging.Formatter`` whose messages are escaped with :func:`escape_controls`."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        original = record.message
        record.message = escape_controls(original)
        try:
            return super().formatMessage(record)
        finally:
            record.message = original
