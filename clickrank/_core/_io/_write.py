"""Atomic writes: a temporary file in the destination folder, then a rename and a ledger entry."""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .._validation import InputError, OutputError
from ._ledger import check_ledger, first_foreign, foreign_message, publish
from ._temp import clean_stale, discard, temp_path

__all__ = [
    "atomic_write",
    "atomic_write_text",
    "atomic_write_json",
    "json_default",
    "output_errors",
]

_OS_ERROR = re.compile(r"\(os error (\d+)\)")


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
        If True, an existing ``path`` is replaced only if clickrank wrote it.
    mkdir : bool
        Create missing parent folders (otherwise they must exist).
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder; expected a file name")
    if path.exists() or path.is_symlink():
        bad = first_foreign(path)
        if bad is not None:
            raise InputError(foreign_message(path, bad))
        if not overwrite:
            raise InputError(f"{path} exists; pass overwrite=True (--force) to replace it")
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.parent.is_dir():
        raise InputError(f"the folder of {path} does not exist")
    check_ledger(path.parent, what=str(path))
    clean_stale(path.parent)
    with output_errors(path):
        tmp = temp_path(path)
        try:
            write(tmp)
            publish(tmp, path)
        except BaseException:
            discard(tmp)
            raise
    return path


@contextlib.contextmanager
def output_errors(path: str | os.PathLike) -> Iterator[None]:
    """Turn an :class:`OSError` while writing ``path`` into :class:`OutputError` naming it."""
    try:
        yield
    except OutputError:
        raise
    except OSError as err:
        reason = err.strerror or str(err)
        raise OutputError(f"cannot write {path}: {reason}") from err
    except Exception as err:  # polars reports OS errors of its writers as ComputeError
        code = _OS_ERROR.search(str(err))
        if code is None or not type(err).__module__.startswith("polars"):
            raise
        raise OutputError(f"cannot write {path}: {os.strerror(int(code.group(1)))}") from err


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
