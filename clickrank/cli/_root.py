"""The root ``clickrank`` command group.

Each command lives in its own module under :mod:`clickrank.cli` and registers
itself on :data:`cli`. Commands stay thin: they parse arguments, make one
library call, and print or write the result.
"""

from __future__ import annotations

import logging
import sys
import warnings

import click

from .._validation import ClickRankError, ClickRankWarning
from .._version import __version__

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "show_default": True}


def one_line(err: BaseException) -> str | None:
    """The one-line message for an error the CLI reports without a traceback, else None.

    :class:`ClickRankError` (bad input, named by clickrank), :class:`OSError`
    (a file that cannot be read or written: permissions, a full disk, a
    read-only file system) and LightGBM's own errors, first line only.
    """
    if isinstance(err, ClickRankError):
        return str(err)
    if isinstance(err, OSError):
        what = err.strerror or type(err).__name__
        where = f"{err.filename}: " if err.filename else ""
        other = f" -> {err.filename2}" if getattr(err, "filename2", None) else ""
        return f"{where}{what}{other}"
    if type(err).__name__ == "LightGBMError":
        text = str(err).strip().splitlines()
        return f"LightGBM: {text[0] if text else type(err).__name__}"
    return None


_SHOW_WARNING = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """clickrank's own warnings as one ``warning: ...`` line on stderr, others as Python prints."""
    if issubclass(category, ClickRankWarning):
        click.echo(f"warning: {message}", err=True)
    else:
        _SHOW_WARNING(message, category, filename, lineno, file, line)


class _Group(click.Group):
    """Group that turns a bad input or an OS error into one line and exit code 1."""

    def invoke(self, ctx: click.Context):  # noqa: D401 - click API
        try:
            return super().invoke(ctx)
        except Exception as err:
            msg = one_line(err)
            if msg is None or (ctx.obj and ctx.obj.get("debug")):
                raise
            raise click.ClickException(msg) from None

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
    warnings.showwarning = _show_warning
    level = logging.WARNING - 10 * min(verbose, 2)
    fmt = "%(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=level, format=fmt, stream=sys.stderr)
