"""File IO shared by the modules: atomic output, and JSON input with located errors.

Atomic output: every file clickrank writes goes through here.

A result is written to a temporary file in the destination folder and then
renamed onto the destination (``os.replace`` is atomic on POSIX and Windows),
so a reader never sees a half-written file and a failure leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._validation import DataFormatError, InputError

__all__ = [
    "atomic_write",
    "atomic_write_text",
    "atomic_write_json",
    "json_default",
    "publish",
    "read_json",
]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def publish(tmp: str | os.PathLike, path: str | os.PathLike) -> None:
    """Give the finished temporary file ``tmp`` a normal file mode and rename it onto ``path``."""
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600
    os.replace(tmp, path)


def atomic_write(
    path: str | os.PathLike,
    write: Callable[[Path], Any],
    *,
    overwrite: bool = True,
    mkdir: bool = True,
) -> Path:
    """Call ``write(tmp_path)``, then move the temporary file onto ``path``.

    Parameters
    ----------
    path : path-like
        Destination file.
    write : callable
        Writes the whole content to the path it is given.
    overwrite : bool
        If False, an existing ``path`` raises :class:`InputError` before anything is written.
    mkdir : bool
        Create missing parent folders (otherwise they must exist).
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder; expected a file name")
    if path.exists() and not overwrite:
        raise InputError(f"{path} exists; pass overwrite=True (--force) to replace it")
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.parent.is_dir():
        raise InputError(f"the folder of {path} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        publish(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str, **kwargs: Any) -> Path:
    """Write ``text`` (UTF-8) atomically; see :func:`atomic_write`."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"), **kwargs)


def json_default(obj: Any) -> Any:
    """JSON for numpy scalars and arrays (``tolist``), paths and anything else (``str``)."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)


def atomic_write_json(path: str | os.PathLike, obj: Any, **kwargs: Any) -> Path:
    """Write ``obj`` as indented JSON atomically; numpy values are converted."""
    text = json.dumps(obj, indent=2, default=json_default) + "\n"
    return atomic_write_text(path, text, **kwargs)


def read_json(path: str | os.PathLike) -> Any:
    """Parse a JSON file; a missing file or bad JSON raises :class:`DataFormatError` naming it."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataFormatError("file not found", path=path) from None
    except json.JSONDecodeError as err:
        raise DataFormatError(f"not valid JSON ({err.msg})", path=path, line=err.lineno) from None
