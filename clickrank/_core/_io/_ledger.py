"""The ledger of clickrank's files (``.clickrank.json`` in each folder it writes into), and
what it decides: which files and folders are clickrank's to replace or delete."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

from .._validation import InputError, OutputError
from ._lock import published
from ._temp import discard, is_temp_name, release, temp_path, umask

__all__ = [
    "LEDGER",
    "publish",
    "record",
    "first_foreign",
    "is_owned",
    "remove_owned",
    "clear_owned",
    "foreign_message",
    "check_ledger",
    "LEDGER_LIMIT",
]

#: Name of the ledger of clickrank's files in each folder it writes into.
LEDGER = ".clickrank.json"
_LEDGER_FORMAT = "clickrank.files"
_DIGEST_LIMIT = 8 * 2**20  # files up to this size also get a content digest
#: Largest ledger clickrank reads or rewrites (about 250,000 entries).
LEDGER_LIMIT = 32 * 2**20


def _ledger_problem(folder: Path) -> str | None:
    """Why ``folder``'s ledger cannot be used (not a regular file, too large), or None."""
    path = folder / LEDGER
    try:
        st = os.lstat(path)
    except OSError:
        return None  # no ledger (or no folder): nothing to check
    if not stat.S_ISREG(st.st_mode):
        kind = (
            "a folder"
            if stat.S_ISDIR(st.st_mode)
            else "a symbolic link"
            if stat.S_ISLNK(st.st_mode)
            else "a FIFO"
            if stat.S_ISFIFO(st.st_mode)
            else "not a regular file"
        )
        return f"{path} is {kind}, not clickrank's ledger (a regular file)"
    if st.st_size > LEDGER_LIMIT:
        return (
            f"{path} has {st.st_size / 2**20:,.1f} MiB, more than the "
            f"{LEDGER_LIMIT // 2**20} MiB a ledger of clickrank may have"
        )
    return None


def check_ledger(folder: str | os.PathLike, *, what: str = "", error: type = InputError) -> None:
    """Refuse (one line) a folder whose ledger is not a regular file of at most LEDGER_LIMIT.

    A FIFO, folder, symbolic link or oversized file named :data:`LEDGER` is
    not something clickrank wrote: it is never read (a FIFO would block) nor
    replaced, and the output is refused before the work.
    """
    problem = _ledger_problem(Path(folder))
    if problem is not None:
        prefix = f"{what}: " if what else ""
        raise error(
            f"{prefix}{problem}; clickrank neither reads nor replaces it: remove it "
            "or choose another folder"
        )


def publish(tmp: str | os.PathLike, path: str | os.PathLike) -> None:
    """Give the finished temporary file ``tmp`` a normal mode, rename it onto ``path``, record it.

    After the rename, ``path`` is entered in the ledger of its folder (see
    :func:`record`), which is what lets a later ``--force`` replace it.
    """
    from .._signals import complete, publishing

    mode = 0o777 if Path(tmp).is_dir() else 0o666
    os.chmod(tmp, mode & ~umask())  # mkstemp creates 0600, mkdtemp 0700
    with publishing():  # a signal does not come between the rename and the ledger
        os.replace(tmp, path)
        release(tmp)
        record(path)
        if published(path):  # every output the command locked is out: it has completed
            complete()


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Exclusive lock on ``folder`` (POSIX ``flock`` on the directory) while its ledger changes."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock, the rename is still atomic
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read_ledger(folder: Path) -> dict[str, dict]:
    """The entries of ``folder``'s ledger; none if it is missing, unreadable, forged or
    not a small regular file (never opened then: a FIFO would block)."""
    if _ledger_problem(folder) is not None:
        return {}
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(folder / LEDGER, flags)
        with open(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return {}
            obj = json.loads(fh.read(LEDGER_LIMIT + 1).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(obj, dict) or obj.get("format") != _LEDGER_FORMAT:
        return {}
    files = obj.get("files")
    return files if isinstance(files, dict) else {}


def _write_ledger(folder: Path, files: dict[str, dict]) -> None:
    text = json.dumps(
        {"format": _LEDGER_FORMAT, "version": 1, "files": files},
        separators=(",", ":"),
        sort_keys=True,
    )
    tmp = temp_path(folder / LEDGER)
    try:
        tmp.write_text(text + "\n", encoding="utf-8")
        os.chmod(tmp, 0o666 & ~umask())
        os.replace(tmp, folder / LEDGER)
        release(tmp)
    except BaseException:
        discard(tmp)
        raise


def _digest(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _entry(path: Path) -> dict:
    st = path.stat()
    if path.is_dir():
        return {"folder": True}
    out = {"size": st.st_size, "mtime_ns": st.st_mtime_ns}
    if st.st_size <= _DIGEST_LIMIT:
        out["blake2b"] = _digest(path)
    return out


def record(path: str | os.PathLike) -> None:
    """Enter ``path`` (just written by clickrank) in the ledger of its folder."""
    path = Path(path)
    folder = path.parent
    with _locked(folder):
        check_ledger(folder, what=f"cannot record {path}", error=OutputError)
        files = _read_ledger(folder)
        present = set(os.listdir(folder))
        files = {k: v for k, v in files.items() if k in present or k == path.name}
        files[path.name] = _entry(path)
        _write_ledger(folder, files)


def _forget(folder: Path, names: set[str]) -> None:
    if not (folder / LEDGER).is_file() or _ledger_problem(folder) is not None:
        return
    with _locked(folder):
        files = {k: v for k, v in _read_ledger(folder).items() if k not in names}
        _write_ledger(folder, files)


def _file_owned(path: Path, files: dict[str, dict]) -> bool:
    entry = files.get(path.name)
    if not isinstance(entry, dict) or entry.get("folder"):
        return False
    st = path.stat()
    if st.st_size != entry.get("size"):
        return False
    if st.st_mtime_ns == entry.get("mtime_ns"):
        return True
    return "blake2b" in entry and _digest(path) == entry["blake2b"]


def first_foreign(path: str | os.PathLike) -> Path | None:
    """The first file or folder at or below ``path`` that clickrank did not write, or None.

    A file is clickrank's if the ledger of its folder lists it unchanged; a
    folder if it has a ledger and everything in it is clickrank's (the ledger
    itself and clickrank's temporary files excepted). Symbolic links are
    never clickrank's. A path that does not exist has nothing foreign.
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return None
    if path.is_symlink():
        return path
    if path.is_file():
        return None if _file_owned(path, _read_ledger(path.parent)) else path
    if not (path / LEDGER).is_file() or _ledger_problem(path) is not None:
        return path
    files = _read_ledger(path)
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        if entry.name == LEDGER or is_temp_name(entry.name):
            continue
        child = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            bad = first_foreign(child)
        elif entry.is_file(follow_symlinks=False):
            bad = None if _file_owned(child, files) else child
        else:
            bad = child
        if bad is not None:
            return bad
    return None


def is_owned(path: str | os.PathLike) -> bool:
    """True if ``path`` exists and clickrank wrote it (and everything below it)."""
    return Path(path).exists() and first_foreign(path) is None


def remove_owned(path: str | os.PathLike) -> None:
    """Delete ``path`` (file or folder) if clickrank wrote all of it, else raise InputError."""
    path = Path(path)
    bad = first_foreign(path)
    if bad is not None:
        raise InputError(foreign_message(path, bad))
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()
    _forget(path.parent, {path.name})


def clear_owned(folder: str | os.PathLike) -> list[Path]:
    """Delete the files clickrank wrote below ``folder``; keep everything else.

    Folders left empty are removed. Returns the files that were kept because
    clickrank did not write them.
    """
    folder = Path(folder)
    kept: list[Path] = []
    if not folder.is_dir():
        return kept
    files = _read_ledger(folder)
    gone: set[str] = set()
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        child = Path(entry.path)
        if entry.name == LEDGER:
            continue
        if entry.is_dir(follow_symlinks=False):
            kept += clear_owned(child)
        elif is_temp_name(entry.name):
            continue
        elif entry.is_file(follow_symlinks=False) and _file_owned(child, files):
            child.unlink()
            gone.add(entry.name)
        else:
            kept.append(child)
    if gone:
        _forget(folder, gone)
    left = [e for e in os.scandir(folder) if e.name != LEDGER]
    if not left:
        (folder / LEDGER).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            folder.rmdir()
    return kept


def foreign_message(path: Path, bad: Path) -> str:
    what = "folder" if path.is_dir() else "file"
    inner = "" if bad == path else f" ({bad} was not written by clickrank)"
    return (
        f"{path} is a {what} that clickrank did not write{inner}; clickrank never "
        "replaces or deletes what it did not write: choose another output path"
    )
