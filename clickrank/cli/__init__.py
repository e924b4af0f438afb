"""The ``clickrank`` command-line interface (one module per command)."""

from __future__ import annotations

from ._root import cli

# Importing a command module registers its command on ``cli``.
from . import evaluate, fit_clicks, interleave, propensity, run, simulate, tour, train  # noqa: E402,F401  isort: skip


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM: unwind like Ctrl-C, so every write in progress removes its temporary file."""
    raise SystemExit(128 + signum)


def main() -> None:
    """Console-script entry point (SIGTERM, like SIGINT, cleans up unfinished writes)."""
    import signal

    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)
    cli(obj={})


__all__ = ["cli", "main"]
