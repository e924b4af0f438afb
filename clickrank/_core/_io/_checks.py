"""Checks before the work: may clickrank write an output, and can it (permissions, room)?"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from .._validation import InputError
from ._ledger import LEDGER, check_ledger, first_foreign, foreign_message
from ._lock import lock_output
from ._temp import discard, is_temp_name, temp_path

__all__ = ["check_output", "check_writable", "check_folder_output"]

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


def _not_an_input(path: Path, src: Path, label: str) -> None:
    """Refuse an output that is the input ``src``, holds it, or lies inside it (a folder)."""
    target, source = path.resolve(), src.resolve()
    same = target == source
    if not same and path.exists() and src.exists():
        try:
            same = os.path.samefile(path, src)  # a hard link or another name of the input
        except OSError:
            same = False
    if same or target in source.parents or source in target.parents:
        how = "is" if same else "holds" if target in source.parents else "lies inside"
        raise InputError(
            f"{label} {how} the input {src}; clickrank never overwrites its inputs "
            "nor writes into an input folder: choose another output path"
        )


def check_output(
    path: str | os.PathLike,
    *,
    force: bool = False,
    what: str = "output",
    need_bytes: int = 0,
    inputs: Iterable[str | os.PathLike | None] = (),
    hint: str = "--force",
    mkdir: bool = True,
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
        :func:`check_writable`), or another clickrank process is writing it
        (inside :func:`locking`, which the CLI commands run in: the output is
        then locked until the command ends). One line naming the path;
        ``--force`` is suggested only where it would work.
    mkdir : bool
        Whether the writer creates a missing folder; if False, a missing folder
        of ``path`` is refused here, before the work.
    """
    path = Path(path)
    label = f"{what} {path}" if what else str(path)
    for inp in inputs:
        if inp is not None:
            _not_an_input(path, Path(inp), label)
    parent = path.absolute().parent
    if parent.exists() and not parent.is_dir():
        raise InputError(f"{label}: {path.parent} is not a folder")
    if not mkdir and not parent.is_dir():
        raise InputError(f"{label}: the folder {path.parent} does not exist")
    check_ledger(path.parent, what=label)
    lock_output(path, what=what)
    if path.is_dir() and not path.is_symlink():
        check_ledger(path, what=label)
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


def check_folder_output(folder: str | os.PathLike, *, what: str = "output") -> Path:
    """Refuse a folder output that holds anything clickrank did not write.

    A folder that clickrank fills with several files (a model) may be new,
    empty, or clickrank's; a user's folder with files of its own is refused
    (one line naming the first such file), whatever ``--force`` says, so
    clickrank never writes beside a user's files.
    """
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        return folder
    check_ledger(folder, what=f"{what} {folder}")
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if entry.name == LEDGER or is_temp_name(entry.name):
            continue
        bad = first_foreign(entry.path)
        if bad is not None:
            raise InputError(
                f"{what} {folder} holds {bad}, which clickrank did not write; clickrank "
                "writes a model only into a new, empty or clickrank-written folder: "
                "choose another output path"
            )
    return folder
