"""Advisory locks on outputs: two clickrank processes never write the same output at once.

While a command runs, every output it checked (:func:`clickrank._core._io.check_output`)
is locked with POSIX ``flock`` on a small lock file in a private folder of the
user (``$TMPDIR/clickrank-locks-UID``, named by a digest of the output's
absolute path), never next to the output. A second process that checks the
same output is refused with one line naming the first one's PID. The kernel
releases the lock when the process ends, however it ends (a crash or
``kill -9`` included); the lock file is removed on a normal exit.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .._signals import reopen
from .._validation import InputError

__all__ = ["lock_output", "release_locks", "locking", "published"]

#: Absolute output path -> (descriptor, lock file) of the locks this process holds.
_HELD: dict[str, tuple[int, Path]] = {}
_DEPTH = [0]  # > 0 while a command runs (:func:`locking`): outputs checked then are locked
_PUBLISHED: set[str] = set()  # the locked outputs published since they were locked


def _lock_file(key: str) -> Path | None:
    folder = Path(tempfile.gettempdir()) / f"clickrank-locks-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None  # no private folder for locks: go without (the rename is still atomic)
    return folder / (hashlib.sha256(key.encode()).hexdigest()[:32] + ".lock")


def lock_output(path: str | os.PathLike, *, what: str = "output") -> None:
    """Lock the output ``path`` for this process (no-op outside :func:`locking`).

    Raises :class:`InputError` if another process holds the lock.
    """
    if not _DEPTH[0]:
        return
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    key = str(Path(path).resolve())
    if key in _HELD:
        return
    lock = _lock_file(key)
    if lock is None:
        return
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode("ascii", "replace").split(" ")[0].strip() or "?"
            os.close(fd)
            raise InputError(
                f"{what} {path} is being written by another clickrank process (PID {holder}); "
                "wait for it to finish or choose another output path"
            ) from None
        try:  # the file may have been removed by its last holder since we opened it
            same = os.stat(lock).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()} {key}\n".encode())
    _HELD[key] = (fd, lock)
    reopen()  # an output checked after the others were published: not completed yet


def published(path: str | os.PathLike) -> bool:
    """Note that the output ``path`` is published; True once every output the command
    locked is (the command has completed)."""
    key = str(Path(path).resolve())
    if key not in _HELD:
        return False
    _PUBLISHED.add(key)
    return _PUBLISHED >= set(_HELD)


def release_locks() -> None:
    """Release (and remove) every output lock this process holds."""
    for key, (fd, lock) in list(_HELD.items()):
        with contextlib.suppress(OSError):
            lock.unlink()  # while still holding it: a waiter re-checks the inode
        with contextlib.suppress(OSError):
            os.close(fd)
        _HELD.pop(key, None)
    _PUBLISHED.clear()


atexit.register(release_locks)


@contextlib.contextmanager
def locking() -> Iterator[None]:
    """Lock the outputs checked inside the block; release them at its end."""
    _DEPTH[0] += 1
    try:
        yield
    finally:
        _DEPTH[0] -= 1
        if not _DEPTH[0]:
            release_locks()
