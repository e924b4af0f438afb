"""Input: UTF-8 text and JSON, the kind of an input path, the parts of a parquet folder.

Errors name the file, line and encoding; an input that is not a regular file (a FIFO,
a device, a socket) is named as such before anything opens it, so it never blocks a
reader nor reads without end.
"""

from __future__ import annotations

import glob
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._validation import DataFormatError

__all__ = ["read_text", "read_json", "special_kind", "check_input", "parquet_parts"]

_SPECIAL = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def special_kind(path: str | os.PathLike) -> str | None:
    """What ``path`` is if it exists but is neither a regular file nor a folder, else None.

    E.g. ``"a character device"`` for ``/dev/zero``, ``"a FIFO (named pipe)"``
    (links are followed; stat only, nothing is opened).
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return next((kind for test, kind in _SPECIAL if test(mode)), None)


def check_input(
    path: str | os.PathLike,
    *,
    what: str = "input",
    folder: bool = False,
    error: Callable[..., Exception] = DataFormatError,
    missing: str | None = None,
) -> Path:
    """The one check of an input path before it is opened; returns it as a Path.

    A missing path is ``no such file`` (``or folder`` with ``folder``), a FIFO,
    device or socket is ``is a ..., not a regular file``, and a folder is
    refused unless ``folder``. ``error`` (a :class:`DataFormatError` by default)
    is raised with ``path=``; ``missing`` replaces the message of a missing path.
    """
    path = Path(path)
    kind = special_kind(path)
    if kind is not None:
        raise error(f"is {kind}, not a regular file; expected a {what}", path=path)
    if not path.exists():
        default = "no such file or folder" if folder else "no such file"
        raise error(missing or default, path=path)
    if path.is_dir() and not folder:
        raise error(f"is a folder; expected a {what}", path=path)
    return path


def parquet_parts(
    path: str | os.PathLike, *, error: Callable[..., Exception] = DataFormatError
) -> list[str]:
    """The parquet files of ``path`` (a file, a folder of parts, a glob), in name order,
    each checked to have the first part's schema.

    polars takes a folder's schema from one part, so a part without a column
    (or with another dtype) would fail later, inside a query, naming no file;
    here every part's footer is read (schemas only, no data) and the first part
    that differs is named with the difference.
    """
    import polars as pl

    p = str(path)
    if any(ch in p for ch in "*?["):
        files = sorted(f for f in glob.glob(p, recursive=True) if not Path(f).is_dir())
    elif Path(p).is_dir():
        files = sorted(str(f) for f in Path(p).rglob("*.parquet") if not f.is_dir())
    else:
        files = [p]
    first: dict | None = None
    for f in files:
        kind = special_kind(f)
        if kind is not None:
            raise error(f"part is {kind}, not a regular file", path=f)
        try:
            schema = dict(pl.read_parquet_schema(f))
        except (pl.exceptions.PolarsError, OSError) as err:
            raise error(f"cannot read the parquet schema: {err}", path=f) from None
        if first is None:
            first = schema
        elif schema != first:
            raise error(_schema_difference(schema, first, files[0]), path=f)
    return files


def _schema_difference(schema: dict, first: dict, first_file: str) -> str:
    missing = [c for c in first if c not in schema]
    extra = [c for c in schema if c not in first]
    if missing or extra:
        parts = ([f"lacks column(s) {', '.join(map(repr, missing))}"] if missing else []) + (
            [f"has extra column(s) {', '.join(map(repr, extra))}"] if extra else []
        )
        how = " and ".join(parts)
    else:
        col = next(c for c in first if schema[c] != first[c])
        how = f"column {col!r} is {schema[col]}, not {first[col]}"
    return f"this part {how} (every part must have the schema of {Path(first_file).name})"


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
    path = check_input(path, what=f"{what} file", missing="cannot read: file not found")
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
