"""Checks before the work: may clickrank write an output, and can it (permissions, room)?"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from .._validation import InputError
from ._ledger import first_foreign, foreign_message
from ._temp import discard, temp_path

__all__ = ["check_output", "check_writable"]

_PROBE_BYTES = 1 << 16  # a file system with less room than this is full for clickrank


def _nearest_folder(path: Path) -> Path:
    p = path.absolute().parent
    while not p.exists():
        p = p.parent
    return p


def _probe(folder: Path, n_bytes: int) -> None:
    """Create, fill and delete a temporary file in ``folder``; OSError if that fails."""
    tmp = temp_path(folder / "write-probe")
    try:
        with open(tmp, "wb") as fh:
            fh.write(b"\0" * n_bytes)
            fh.flush()
            os.fsync(fh.fileno())
    finally:
        discard(tmp)


def _size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:,.0f} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:.1f}"  # pragma: no cover


def check_writable(path: str | os.PathLike, *, what: str = "output", need_bytes: int = 0) -> Path:
    """Check that ``path`` can be created: its nearest existing folder is writable and has room.

    A small temporary file is created, filled and removed in that folder,
    which catches a read-only file system, missing permissions and a full
    disk; with ``need_bytes`` the free space must also exceed that estimate.
    Raises :class:`InputError` (one line naming the path) otherwise.
    """
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    base = path if path.is_dir() else _nearest_folder(path)
    if not base.is_dir():
        raise InputError(f"{label}: {base} is not a folder")
    try:
        _probe(base, _PROBE_BYTES)
    except OSError as err:
        reason = err.strerror or str(err)
        raise InputError(f"{label}: cannot write in {base} ({reason})") from None
    if need_bytes:
        free = shutil.disk_usage(base).free
        if need_bytes > free:
            raise InputError(
                f"{label}: needs about {_size(need_bytes)} but only {_size(free)} "
                f"are free on the file system of {base}"
            )
    return path


def check_output(
    path: str | os.PathLike,
    *,
    force: bool = False,
    what: str = "output",
    need_bytes: int = 0,
    inputs: Iterable[str | os.PathLike | None] = (),
    hint: str = "--force",
) -> Path:
    """Check, before any work, that clickrank may and can write the output ``path``.

    Parameters
    ----------
    path : path-like
        The output, a file or a folder.
    force : bool
        Replace an existing output, which must be clickrank's (:func:`is_owned`).
    what : str
        How the output is named in messages (``"--out"``).
    need_bytes : int
        Estimated size of the output; refused if the file system has less free space.
    inputs : paths
        The inputs of the command (None entries are skipped): the output may
        not be one of them or hold one of them, since inputs are never overwritten.
    hint : str
        How to ask for a replacement, in the message (``--force`` on the
        command line, ``overwrite=True`` in the library).

    Raises
    ------
    InputError
        The output is an input, exists (without ``force``) or is not
        clickrank's (whatever ``force``), or its location is not a writable folder with room (see
        :func:`check_writable`). One line naming the path; ``--force`` is
        suggested only where it would work.
    """
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    target = path.resolve()
    for inp in inputs:
        if inp is None:
            continue
        src = Path(inp).resolve()
        if src == target or target in src.parents:
            raise InputError(
                f"{label} {'is' if src == target else 'holds'} the input {inp}; "
                "clickrank never overwrites its inputs: choose another output path"
            )
    if path.exists() or path.is_symlink():
        bad = first_foreign(path)
        if bad is not None:
            raise InputError(f"{what + ' ' if what else ''}{foreign_message(path, bad)}")
        if not force:
            kind = "folder" if path.is_dir() else "file"
            raise InputError(
                f"{label} exists (a {kind} clickrank wrote); pass {hint} to replace it"
            )
    return check_writable(path.parent if path.is_dir() else path, what=what, need_bytes=need_bytes)
