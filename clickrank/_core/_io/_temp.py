"""Temporary files in clickrank's naming: created next to their destination, removed on
any failure, at exit, and (for a process that was killed) by the next write into the folder."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["temp_path", "discard", "release", "is_temp_name", "clean_stale", "umask"]

_TEMP = re.compile(r"^\..+\.clickrank-(\d+)-[^/]*\.tmp$")


def umask() -> int:
    """The process's file-mode creation mask (read without changing it)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: Temporary files and folders of this process not yet published or removed.
_LIVE: set[Path] = set()


def temp_path(dest: str | os.PathLike, *, folder: bool = False) -> Path:
    """Create a hidden temporary file (or folder) next to ``dest``, in clickrank's naming.

    The name is ``.NAME.clickrank-PID-XXXXXXXX.tmp``: :func:`clean_stale`
    recognizes it and removes it once process ``PID`` is gone. Until it is
    published or removed, it is also removed when the process exits
    (``atexit``): an interrupted write (Ctrl-C, SIGTERM in the CLI) leaves
    nothing even if a library in between swallowed the exception.
    """
    dest = Path(dest)
    prefix, parent = f".{dest.name}.clickrank-{os.getpid()}-", dest.parent
    if folder:
        path = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=parent))
    else:
        fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=parent)
        os.close(fd)
        path = Path(tmp)
    _LIVE.add(path.absolute())
    return path


def discard(tmp: str | os.PathLike) -> None:
    """Remove a temporary file or folder of :func:`temp_path` (if it is still there)."""
    tmp = Path(tmp)
    _LIVE.discard(tmp.absolute())
    if tmp.is_dir() and not tmp.is_symlink():
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        tmp.unlink(missing_ok=True)


def release(tmp: str | os.PathLike) -> None:
    """Forget a temporary path that was renamed into place (nothing to remove at exit)."""
    _LIVE.discard(Path(tmp).absolute())


@atexit.register
def _discard_live() -> None:
    for tmp in list(_LIVE):
        discard(tmp)


def is_temp_name(name: str) -> bool:
    """True for a name in clickrank's temporary naming (see :func:`temp_path`)."""
    return _TEMP.match(name) is not None


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists but belongs to someone else, or unknown: keep its files
    return True


def clean_stale(folder: str | os.PathLike) -> list[Path]:
    """Remove clickrank's temporary files in ``folder`` whose writing process is gone.

    Only names of :func:`temp_path`'s form are considered, and only those
    whose PID no longer runs, so a write in progress in another process is
    left alone. Returns the paths removed.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        m = _TEMP.match(entry.name)
        if m is None or _pid_alive(int(m.group(1))):
            continue
        path = Path(entry.path)
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
    return removed
