"""Termination requests honoured promptly, even while native code (numba, LightGBM, polars) runs.

Python runs a signal handler only when the main thread executes Python code,
so a SIGTERM that arrives while the main thread waits in native code (a
polars sink pulling chunks on its own threads, a long numba kernel) would
wait until that code returns. :func:`install` (called by the ``clickrank``
command) therefore also registers a wake-up descriptor that the C-level
handler writes to at once, and a watchdog thread that reads it:

* it sets the flag that :func:`requested` reads and :func:`check` raises on,
  which long loops call between chunks, replicates or trees, in any thread
  (:func:`lightgbm_callback` does so between LightGBM's trees);
* the Python handler raises ``SystemExit(143)`` in the main thread as soon as it
  runs, so every write in progress removes its temporary file on the way out;
* if the process is still running :data:`GRACE` seconds later, the watchdog
  removes this process's temporary files itself and ends the process with exit
  code 143 (``os._exit``): nothing partial is left, and the locks on the outputs
  are released by the kernel. Ctrl-C (SIGINT) is watched the same way, with exit code 1.

A command whose outputs are all published has completed: the ledger lists them, so a
signal that arrives after that is ignored and the command exits 0, and one that arrives
while an output is being renamed and recorded (:func:`publishing`) waits for the end of
that step. The exit code and the ledger agree: exit 0 and every output there, or
another code and no output of the unfinished command left half-written.

A command that SIGTERM or SIGINT (Ctrl-C) stopped ends in :func:`leave`, not in the
interpreter's shutdown: a native thread still running our Python (polars' streaming
sink pulls the simulated chunks from a Python source on its own threads) would be
stopped there by an unwinding its Rust frames do not let through, and glibc then aborts
the process ("FATAL: exception not rethrown", SIGABRT instead of the exit code).

A signal that arrives while a native library calls back into Python (numba's JIT
cache is written from an llvmlite ctypes callback) raises its exception inside that
callback, where ctypes reports it as "unraisable" and carries on; :func:`install`'s
``sys.unraisablehook`` keeps those quiet, since the flag and the watchdog still end
the command, and passes every other unraisable exception to the previous hook.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = [
    "GRACE",
    "TERMINATED",
    "Terminated",
    "at_finish",
    "check",
    "complete",
    "completed",
    "install",
    "leave",
    "lightgbm_callback",
    "publishing",
    "requested",
    "reopen",
]

#: Exit code after SIGTERM (128 + 15).
TERMINATED = 128 + signal.SIGTERM
#: Seconds the main thread gets to unwind before the watchdog ends the process.
GRACE = 1.5

_REQUESTED = threading.Event()
_INTERRUPTED = threading.Event()  # SIGINT seen (after install)
_INSTALLED = [False]
_WATCHED = {signal.SIGTERM}  # and SIGINT where install() set its handler
_DONE = threading.Event()  # every output of the command is published: it has completed
_GATE = threading.Lock()  # held while an output is published: the watchdog waits for it
_PUBLISHING = [0]  # > 0 while the main thread renames and records an output
_PENDING: list[BaseException | None] = [None]  # what a signal raised while publishing
_CLEANUP: list[Callable[[], None]] = []  # run by _finish before the process exits


class Terminated(SystemExit):
    """Raised by :func:`check` once termination was requested (exit code 143)."""

    def __init__(self) -> None:
        super().__init__(TERMINATED)


def requested() -> bool:
    """True once SIGTERM was received (after :func:`install`) by a command not yet completed."""
    return _REQUESTED.is_set() and not _DONE.is_set()


def check() -> None:
    """Raise :class:`Terminated` if termination was requested; call it between chunks or trees."""
    if requested():
        raise Terminated()


def lightgbm_callback(env: object) -> None:
    """A LightGBM callback (``callbacks=[lightgbm_callback]``): stop between trees on SIGTERM."""
    check()


lightgbm_callback.order = 0  # type: ignore[attr-defined]  # LightGBM sorts callbacks by it


def complete() -> None:
    """The command's outputs are all published: a signal from now on is ignored."""
    _DONE.set()


def reopen() -> None:
    """The command checked another output: it has not completed until that one is published."""
    _DONE.clear()


def completed() -> bool:
    """True once :func:`complete` was called (and no output checked since)."""
    return _DONE.is_set()


@contextmanager
def publishing() -> Iterator[None]:
    """Publish an output (rename it, record it in the ledger) as one step that a signal
    does not split: the signal's exception is raised at the end of the step, unless the
    step completed the command (:func:`complete`)."""
    with _GATE:
        _PUBLISHING[0] += 1
        try:
            yield
        finally:
            _PUBLISHING[0] -= 1
    pending, _PENDING[0] = _PENDING[0], None
    if pending is not None and not _DONE.is_set():
        raise pending


def _raise(err: BaseException) -> None:
    """Raise ``err`` from a signal handler, or keep it for the end of a publishing step."""
    if _DONE.is_set():
        return
    if _PUBLISHING[0]:
        _PENDING[0] = err
        return
    raise err


def _handler(signum: int, frame: object) -> None:
    if not _DONE.is_set():
        _REQUESTED.set()
    _raise(Terminated())


def _interrupt(signum: int, frame: object) -> None:
    if not _DONE.is_set():
        _INTERRUPTED.set()
    _raise(KeyboardInterrupt())


def at_finish(cleanup: Callable[[], None]) -> None:
    """Run ``cleanup`` when a signal ends the process (:mod:`clickrank._core._io` removes
    its temporary files and releases its locks so), in the order registered."""
    if cleanup not in _CLEANUP:
        _CLEANUP.append(cleanup)


def _finish(code: int = TERMINATED) -> None:
    """End the process now: run the cleanups (this process's temporary files, its output
    locks), exit ``code``."""
    try:
        for cleanup in _CLEANUP:
            cleanup()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    finally:
        os._exit(code)


def leave(end: SystemExit) -> None:
    """End a command that ``end`` stops: after SIGTERM or SIGINT, here and now
    (:func:`_finish`, with ``end``'s code; see the module docstring), else by raising it."""
    if (_REQUESTED.is_set() or _INTERRUPTED.is_set()) and not _DONE.is_set():
        _finish(end.code if isinstance(end.code, int) else 1)
    raise end


def _unraisable(hook: Callable[[object], None]) -> Callable[[object], None]:
    """``sys.unraisablehook`` that drops the exceptions our handlers raised (a signal that
    landed in a native callback) and passes the rest to ``hook``."""

    def quiet(unraisable: object) -> None:
        exc = getattr(unraisable, "exc_type", None)
        ours = (exc is not None and issubclass(exc, Terminated) and _REQUESTED.is_set()) or (
            exc is KeyboardInterrupt and _INTERRUPTED.is_set()
        )
        if not ours:
            hook(unraisable)

    return quiet


def _watch(fd: int) -> None:
    while True:
        try:
            data = os.read(fd, 64)
        except InterruptedError:  # pragma: no cover
            continue
        except OSError:  # pragma: no cover - descriptor closed
            return
        if not data:  # pragma: no cover
            return
        if any(sig in data for sig in _WATCHED) and not _DONE.is_set():
            code = TERMINATED if signal.SIGTERM in data else 1
            (_REQUESTED if code == TERMINATED else _INTERRUPTED).set()
            # the main thread unwinds (SystemExit, KeyboardInterrupt) unless native code
            # holds it: a polars sink waits on its own threads, so Python's handler would
            # not run before the whole write ends
            threading.Event().wait(GRACE)
            with _GATE:  # an output being published is published and recorded first
                if not _DONE.is_set():
                    _finish(code)


def install() -> bool:
    """Honour SIGTERM promptly (see the module docstring); main thread only, idempotent.

    Leaves a SIGTERM handler that is not the default alone (an embedding
    application's). Returns True if installed.
    """
    if _INSTALLED[0]:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return False
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):  # pragma: no cover
        os.close(r)
        os.close(w)
        return False
    signal.signal(signal.SIGTERM, _handler)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)  # the same KeyboardInterrupt, remembered
        _WATCHED.add(signal.SIGINT)
    sys.unraisablehook = _unraisable(sys.unraisablehook)
    threading.Thread(target=_watch, args=(r,), name="clickrank-sigterm", daemon=True).start()
    _INSTALLED[0] = True
    return True
