"""The ``clickrank`` command-line interface (one module per command)."""

from __future__ import annotations

from ._root import cli

# Importing a command module registers its command on ``cli``.
from . import evaluate, fit_clicks, interleave, propensity, run, simulate, tour, train  # noqa: E402,F401  isort: skip


def main() -> None:
    """Console-script entry point: SIGTERM, like SIGINT, cleans up unfinished writes and is
    honoured within seconds even inside native code (:mod:`clickrank._core._signals`)."""
    from .._core._signals import install, leave

    install()
    try:
        cli(obj={})
    except SystemExit as end:
        leave(end)


__all__ = ["cli", "main"]
