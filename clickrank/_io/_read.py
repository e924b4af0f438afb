"""Text and JSON input: UTF-8, with errors that name the file, line and encoding."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .._validation import DataFormatError

__all__ = ["read_text", "read_json"]


_BOMS = (
    (b"\xef\xbb\xbf", "UTF-8 with a byte-order mark"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def read_text(path: str | os.PathLike, *, what: str = "text") -> str:
    """Read a UTF-8 text file; other encodings raise :class:`DataFormatError` naming the file.

    A UTF-8 byte-order mark is accepted and dropped; UTF-16 (with or without
    a byte-order mark) and other non-UTF-8 bytes are refused with the encoding
    that was found and what to do.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataFormatError("cannot read: file not found", path=path) from None
    except IsADirectoryError:
        raise DataFormatError(f"is a folder; expected a {what} file", path=path) from None
    except OSError as err:
        raise DataFormatError(f"cannot read: {err.strerror or err}", path=path) from None
    if raw.startswith(_BOMS[0][0]):
        raw = raw[3:]
    name = next((name for bom, name in _BOMS[1:] if raw.startswith(bom)), None)
    if name is not None or b"\0" in raw[:4]:  # ASCII text in UTF-16/32 has NUL bytes
        raise DataFormatError(
            f"is {name or 'UTF-16 or UTF-32'}-encoded; clickrank reads "
            f"{what} as UTF-8 (re-save the file as UTF-8)",
            path=path,
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataFormatError(
            f"not UTF-8 {what} ({err.reason} at byte {err.start})", path=path
        ) from None


def read_json(path: str | os.PathLike) -> Any:
    """Parse a UTF-8 JSON file; a missing file, another encoding or bad JSON raises
    :class:`DataFormatError` naming the file (and line)."""
    path = Path(path)
    text = read_text(path, what="JSON")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFormatError(f"not valid JSON ({err.msg})", path=path, line=err.lineno) from None
