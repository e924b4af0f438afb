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

from .._core._validation import ClickRankError, ClickRankWarning
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


# -- one spelling per option, the old ones as hidden aliases -----------------------------------
#
# The CLI spells an output file or folder ``-o/--out`` and the length of a shown list
# ``--top-k`` in every command. Spellings used before (``--output``, ``--k``, ``-K``,
# ``--positions``) still work: they are hidden from ``--help`` and print one line,
# ``warning: --output is deprecated; use --out``.


class AliasedOption(click.Option):
    """A :class:`click.Option` that also accepts hidden, deprecated spellings.

    ``deprecated`` lists the old spellings (e.g. ``("--output",)``); they set the
    same parameter and print a one-line warning on stderr when used.
    """

    def __init__(self, *args, deprecated: tuple[str, ...] = (), **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.old_spellings = tuple(deprecated)

    def add_to_parser(self, parser, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        action = "store_const" if self.is_flag else "store"
        new = max(self.opts, key=len)
        for old in self.old_spellings:
            parser.add_option(
                obj=self,
                opts=[old],
                dest=self.name,
                action=action,
                nargs=self.nargs,
                **({"const": self.flag_value} if self.is_flag else {}),
            )
            table = parser._long_opt if old.startswith("--") else parser._short_opt
            option = table[old]
            option.process = _warn_then(option.process, old, new)


def _warn_then(process, old: str, new: str):
    def warned(value, state):
        click.echo(f"warning: {old} is deprecated; use {new}", err=True)
        return process(value, state)

    return warned


def out_option(*decls: str, deprecated: tuple[str, ...] = (), **kwargs):
    """The output option of a command: ``-o/--out`` (old spellings in ``deprecated``)."""
    return click.option("-o", "--out", *decls, cls=AliasedOption, deprecated=deprecated, **kwargs)


def top_k_option(*decls: str, deprecated: tuple[str, ...] = (), **kwargs):
    """The length of a shown list: ``--top-k`` (old spellings in ``deprecated``)."""
    return click.option("--top-k", *decls, cls=AliasedOption, deprecated=deprecated, **kwargs)


class _Group(click.Group):
    """Group that turns a bad input or an OS error into one line and exit code 1."""

    def invoke(self, ctx: click.Context):  # noqa: D401 - click API
        from .._core._io import locking

        try:
            with locking():  # the outputs a command checks are locked until it ends
                return super().invoke(ctx)
        except Exception as err:
            from .._core._signals import TERMINATED, requested

            if requested():  # an error raised by a check() inside a library: exit 143
                raise SystemExit(TERMINATED) from None
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
