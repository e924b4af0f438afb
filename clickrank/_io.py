"""File IO shared by the modules: atomic output, ownership of outputs, JSON input.

Atomic output
    Every file clickrank writes goes through :func:`atomic_write`: the content
    goes to a hidden temporary file in the destination folder, named
    ``.NAME.clickrank-PID-XXXXXXXX.tmp``, which is then renamed onto the
    destination (``os.replace`` is atomic on POSIX and Windows), so a reader
    never sees a half-written file and a failure leaves nothing behind. A
    temporary file left by a process that was killed (its PID is gone) is
    removed the next time clickrank writes into that folder
    (:func:`clean_stale`); nothing else is ever matched.

Ownership
    clickrank replaces or deletes only what it wrote itself. Each folder it
    writes into gets a small ledger, :data:`LEDGER` (``.clickrank.json``),
    that records the name, size, modification time and (for files up to
    8 MiB) a BLAKE2 digest of every file clickrank published there. A file is
    *clickrank's* if its folder's ledger lists it with the same size and the
    same modification time or digest; a folder is clickrank's if it has a
    ledger and everything below it is clickrank's. A file that is not (a
    user's file, or one edited since) is never overwritten or deleted:
    :func:`check_output` and :func:`atomic_write` refuse with one line, and
    ``--force`` does not change that.

Input
    :func:`read_json` reads UTF-8 JSON and names the file, line and encoding
    problem in its errors.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ._validation import DataFormatError, InputError, OutputError

__all__ = [
    "LEDGER",
    "atomic_write",
    "atomic_write_text",
    "atomic_write_json",
    "json_default",
    "publish",
    "read_json",
    "temp_path",
    "discard",
    "clean_stale",
    "is_owned",
    "first_foreign",
    "record",
    "clear_owned",
    "remove_owned",
    "check_output",
    "check_writable",
    "output_errors",
    "read_text",
]

#: Name of the ledger of clickrank's files in each folder it writes into.
LEDGER = ".clickrank.json"
_LEDGER_FORMAT = "clickrank.files"
_DIGEST_LIMIT = 8 * 2**20  # files up to this size also get a content digest
_PROBE_BYTES = 1 << 16  # a file system with less room than this is full for clickrank
_OS_ERROR = re.compile(r"\(os error (\d+)\)")
_TEMP = re.compile(r"^\..+\.clickrank-(\d+)-[^/]*\.tmp$")


# -- temporary files -------------------------------------------------------------------


def _umask() -> int:
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


def publish(tmp: str | os.PathLike, path: str | os.PathLike) -> None:
    """Give the finished temporary file ``tmp`` a normal mode, rename it onto ``path``, record it.

    After the rename, ``path`` is entered in the ledger of its folder (see
    :func:`record`), which is what lets a later ``--force`` replace it.
    """
    mode = 0o777 if Path(tmp).is_dir() else 0o666
    os.chmod(tmp, mode & ~_umask())  # mkstemp creates 0600, mkdtemp 0700
    os.replace(tmp, path)
    _LIVE.discard(Path(tmp).absolute())
    record(path)


# -- the ledger ------------------------------------------------------------------------


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
    try:
        obj = json.loads((folder / LEDGER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(obj, dict) or obj.get("format") != _LEDGER_FORMAT:
        return {}
    files = obj.get("files")
    return files if isinstance(files, dict) else {}


def _write_ledger(folder: Path, files: dict[str, dict]) -> None:
    text = json.dumps({"format": _LEDGER_FORMAT, "version": 1, "files": files}, indent=1,
                      sort_keys=True)
    tmp = temp_path(folder / LEDGER)
    try:
        tmp.write_text(text + "\n", encoding="utf-8")
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, folder / LEDGER)
        _LIVE.discard(tmp.absolute())
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
        files = _read_ledger(folder)
        files = {k: v for k, v in files.items() if (folder / k).exists() or k == path.name}
        files[path.name] = _entry(path)
        _write_ledger(folder, files)


def _forget(folder: Path, names: set[str]) -> None:
    if not (folder / LEDGER).is_file():
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
    if not (path / LEDGER).is_file():
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
        raise InputError(_foreign_message(path, bad))
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


# -- checks before the work ------------------------------------------------------------


def _foreign_message(path: Path, bad: Path) -> str:
    what = "folder" if path.is_dir() else "file"
    inner = "" if bad == path else f" ({bad} was not written by clickrank)"
    return (f"{path} is a {what} that clickrank did not write{inner}; clickrank never "
            "replaces or deletes what it did not write: choose another output path")


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
            raise InputError(f"{label}: needs about {_size(need_bytes)} but only {_size(free)} "
                             f"are free on the file system of {base}")
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
            raise InputError(f"{label} {'is' if src == target else 'holds'} the input {inp}; "
                             "clickrank never overwrites its inputs: choose another output path")
    if path.exists() or path.is_symlink():
        bad = first_foreign(path)
        if bad is not None:
            raise InputError(f"{what + ' ' if what else ''}{_foreign_message(path, bad)}")
        if not force:
            kind = "folder" if path.is_dir() else "file"
            raise InputError(f"{label} exists (a {kind} clickrank wrote); pass {hint} to "
                             "replace it")
    return check_writable(path.parent if path.is_dir() else path, what=what,
                          need_bytes=need_bytes)


# -- atomic writes ---------------------------------------------------------------------


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
            raise InputError(_foreign_message(path, bad))
        if not overwrite:
            raise InputError(f"{path} exists; pass overwrite=True (--force) to replace it")
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.parent.is_dir():
        raise InputError(f"the folder of {path} does not exist")
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


# -- input -----------------------------------------------------------------------------

_BOMS = ((b"\xef\xbb\xbf", "UTF-8 with a byte-order mark"), (b"\xff\xfe", "UTF-16"),
         (b"\xfe\xff", "UTF-16"))


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
        raise DataFormatError(f"is {name or 'UTF-16 or UTF-32'}-encoded; clickrank reads "
                              f"{what} as UTF-8 (re-save the file as UTF-8)", path=path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise DataFormatError(f"not UTF-8 {what} ({err.reason} at byte {err.start})",
                              path=path) from None


def read_json(path: str | os.PathLike) -> Any:
    """Parse a UTF-8 JSON file; a missing file, another encoding or bad JSON raises
    :class:`DataFormatError` naming the file (and line)."""
    path = Path(path)
    text = read_text(path, what="JSON")
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFormatError(f"not valid JSON ({err.msg})", path=path, line=err.lineno) from None
