"""The root ``clickrank`` command group.

Each command lives in its own module under :mod:`clickrank.cli` and registers
itself on :data:`cli`. Commands stay thin: they parse arguments, make one
library call, and print or write the result.
"""

from __future__ import annotations

import logging
import sys

import click

from .._validation import ClickRankError
from .._version import __version__

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "show_default": True}


class _Group(click.Group):
    """Group that turns every :class:`ClickRankError` into one line and exit code 1."""

    def invoke(self, ctx: click.Context):  # noqa: D401 - click API
        try:
            return super().invoke(ctx)
        except ClickRankError as err:
            if ctx.obj and ctx.obj.get("debug"):
                raise
            raise click.ClickException(str(err)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(self.commands)


@click.group(cls=_Group, context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "-V", "--version", prog_name="clickrank")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, verbose: int, debug: bool) -> None:
    """clickrank: simulate click bias, estimate it, remove it, and prove the result.

    Run ``clickrank COMMAND --help`` for the options of a command.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    level = logging.WARNING - 10 * min(verbose, 2)
    fmt = "%(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=level, format=fmt, stream=sys.stderr)
