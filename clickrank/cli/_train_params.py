"""The learner parameters of ``clickrank train``: ``--set KEY=VALUE``, ``--config FILE``
and the option spellings of earlier versions.

As in LightGBM's and XGBoost's command lines, the keys are the estimator's own
constructor parameters (``clickrank.ClickRanker`` for the default learner), so a
parameter's default and its check live once, in the library. This module parses
the values, says which keys a learner takes (read from its signature) and maps
the old options (``--learning-rate 0.2``) to their keys.
"""

from __future__ import annotations

import inspect
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from .._core._validation import InputError
from ..specs.names import (
    CANDIDATE_SETS,
    CLICK_MODELS,
    NAIVE_KINDS,
    NORMALIZATIONS,
    VALIDATION_ESTIMATES,
)

__all__ = [
    "parse_value",
    "parse_settings",
    "read_config",
    "check_keys",
    "check_types",
    "constructor_keys",
    "legacy_options",
    "legacy_params",
    "LEGACY",
    "GroupedCommand",
]


# -- values -------------------------------------------------------------------------------------


def parse_value(text: str) -> Any:
    """A ``--set`` value: a TOML literal (``0.3``, ``5``, ``true``, ``"x"``, ``[4, 8]``,
    ``{bagging_freq = 1}``); ``none`` is None (TOML has no null); a bare word is a string,
    and so is a bare word in a list (``[naive, dr]``).

    Examples
    --------
    >>> [parse_value(v) for v in ("0.2", "5", "true", "ips", '"dr"', "none", "[naive, dr]")]
    [0.2, 5, True, 'ips', 'dr', None, ['naive', 'dr']]
    """
    text = text.strip()
    if text in ("none", "None"):
        return None
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        pass
    if text.startswith("[") and text.endswith("]") and "[" not in text[1:-1]:
        inner = text[1:-1].strip()
        return [parse_value(item) for item in inner.split(",")] if inner else []
    return text


def parse_settings(items: Iterable[str]) -> dict[str, Any]:
    """``--set KEY=VALUE`` items as a dict (a later key wins)."""
    out: dict[str, Any] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise InputError(f"--set takes KEY=VALUE (e.g. learning_rate=0.2), got {item!r}")
        out[key.strip()] = parse_value(value)
    return out


def read_config(path: str | Path | None) -> dict[str, Any]:
    """The keys of a ``--config`` TOML file (its top level: the learner's parameters)."""
    if path is None:
        return {}
    try:
        with open(path, "rb") as fh:
            spec = tomllib.load(fh)
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"--config {path}: not valid TOML ({err})") from None
    except UnicodeDecodeError:
        raise InputError(f"--config {path}: not UTF-8 text") from None
    return spec


# -- keys ---------------------------------------------------------------------------------------


def constructor_keys(cls: Any, *, leave: tuple[str, ...] = ()) -> dict[str, inspect.Parameter]:
    """The keyword-only parameters of ``cls``'s constructor (or of a function), but ``leave``."""
    target = cls.__init__ if inspect.isclass(cls) else cls
    return {
        p.name: p
        for p in inspect.signature(target).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.name not in leave
    }


def check_keys(params: dict[str, Any], allowed: Iterable[str], what: str,
               sources: dict[str, str]) -> None:  # fmt: skip
    """One line naming the first key ``what`` does not take and the keys it does."""
    allowed = sorted(set(allowed))
    for key in params:
        if key not in allowed:
            raise InputError(
                f"unknown key {key!r} ({sources.get(key, '--set')}) for {what}; "
                f"valid keys: {', '.join(allowed)}"
            )


_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
    "None": (type(None),),
    "tuple": (list,),
    "list": (list,),
    "dict": (dict,),
}


def _alternatives(annotation: str) -> list[str]:
    """The members of a ``A | B[C | D]`` annotation at the top level."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(annotation):
        depth += {"[": 1, "]": -1}.get(ch, 0)
        if ch == "|" and depth == 0:
            out.append(annotation[start:i].strip())
            start = i + 1
    return [*out, annotation[start:].strip()]


def _takes(annotation: str, value: Any) -> bool:
    """Whether ``value`` (a TOML value) is of a kind ``annotation`` names; True where the
    annotation names something else (``Any``, a class): the estimator checks it."""
    for alt in _alternatives(annotation):
        base, _, inner = alt.partition("[")
        kinds = _TYPES.get(base.strip())
        if kinds is None:
            return True
        if isinstance(value, bool) and bool not in kinds:
            continue
        if not isinstance(value, kinds):
            continue
        inner = inner.removesuffix("]").removesuffix(", ...").strip()
        if isinstance(value, list) and inner:  # list[X], tuple[X, ...]: every element an X
            if all(_takes(inner, v) for v in value):
                return True
            continue
        return True
    return False


def check_types(params: dict[str, Any], signature: dict[str, inspect.Parameter],
                sources: dict[str, str]) -> None:  # fmt: skip
    """One line for a value whose kind the parameter's annotation does not take (a word
    for a number, a number for a list of tables); the estimator checks the value itself."""
    for key, value in params.items():
        p = signature.get(key)
        annotation = p.annotation if p is not None else inspect.Parameter.empty
        if isinstance(annotation, str) and not _takes(annotation, value):
            raise InputError(
                f"{key} takes {annotation}, got {value!r} ({sources.get(key, '--set')})"
            )


# -- the option spellings of earlier versions -----------------------------------------------


def _truncation(value: int) -> dict[str, Any]:
    return {"truncation_level": None if value == 0 else value}  # 0 meant all pairs


def _clip(value: str) -> dict[str, Any]:
    low = value.strip().lower()
    return {"clip": None if low == "none" else "auto" if low == "auto" else parse_value(value)}


def _family(value: str) -> dict[str, Any]:
    return {"family": [m.strip() for m in value.split(",") if m.strip()]}


_REFIT = {"auto": "auto", "always": True, "never": False}


@dataclass(frozen=True)
class Legacy:
    """An option of earlier versions: hidden, mapped to the parameters it sets.

    ``key`` is the parameter (``convert`` gives the parameters of its value where
    the mapping is not one to one); ``new`` is how the warning spells the new way,
    with ``{value}`` for the value given.
    """

    decls: tuple[str, ...]
    key: str
    type: Any = None
    convert: Callable[[Any], dict[str, Any]] | None = None
    new: str = ""
    flag: bool = False

    def params(self, value: Any) -> dict[str, Any]:
        return self.convert(value) if self.convert else {self.key: value}

    def spelling(self, value: Any) -> str:
        shown = str(value).lower() if isinstance(value, bool) else value
        if self.key == "refit":
            shown = {"auto": '"auto"', "always": "true", "never": "false"}[value]
        return (self.new or f"--set {self.key}={{value}}").format(value=shown)


#: Every option ``clickrank train`` had before ``--set``: still accepted, hidden from
#: ``--help``, with one ``warning:`` line naming the new spelling.
LEGACY: tuple[Legacy, ...] = (
    Legacy(("--trees",), "n_estimators", int),
    Legacy(("--learning-rate",), "learning_rate", float),
    Legacy(("--leaves",), "num_leaves", int, new="--set grid=[{{num_leaves={value}}}]"),
    Legacy(("--max-depth",), "max_depth", int, new="--set grid=[{{max_depth={value}}}]"),
    Legacy(("--min-data-in-leaf",), "min_data_in_leaf", int),
    Legacy(("--truncation",), "truncation_level", int, _truncation),
    Legacy(("--early-stopping",), "early_stopping_rounds", int),
    Legacy(("--early-stopping-fraction",), "early_stopping_fraction", float),
    Legacy(("--eval-at",), "eval_at", int),
    Legacy(("--folds",), "folds", int),
    Legacy(("--validation",), "validation", click.Choice(VALIDATION_ESTIMATES)),
    Legacy(("--clip",), "clip", str, _clip),
    Legacy(("--normalize",), "normalize", click.Choice(NORMALIZATIONS)),
    Legacy(("--candidates",), "candidates", click.Choice(CANDIDATE_SETS)),
    Legacy(("--naive-kind",), "naive_kind", click.Choice(NAIVE_KINDS)),
    Legacy(("--click-model",), "click_model", click.Choice(CLICK_MODELS)),
    Legacy(("--family",), "family", str, _family, new="--set family=[{value}]"),
    Legacy(("--combine",), "combine", click.Choice(["average", "select"])),
    Legacy(("--fallback",), "fallback", click.Choice(["crm", "proximal", "safe"])),
    Legacy(("--proximal",), "proximal", float),
    Legacy(("--safe/--no-safe",), "safe", bool, flag=True),
    Legacy(("--refit",), "refit", click.Choice(list(_REFIT)), lambda v: {"refit": _REFIT[v]}),
    Legacy(("--workers",), "num_workers", int),
    Legacy(("--valid-fraction",), "valid_fraction", float),
    Legacy(("--strategy",), "strategy", str, new="--target pairs:{value}"),
    Legacy(("--ips-weighted",), "ips_weighted", bool, new="--target skip-above-ips", flag=True),
)

#: Where the values of the old options are kept while the command line is read.
_META = "clickrank.train.legacy"

#: The keys of the old options that shape the trees (a grid entry in a selection).
SHAPE_KEYS = ("num_leaves", "max_depth")


def _record(item: Legacy) -> Callable:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is None:
            return
        click.echo(f"warning: {_used(param, value)} is deprecated; use {item.spelling(value)}",
                   err=True)  # fmt: skip
        ctx.meta.setdefault(_META, []).append((item, value))

    return callback


def _used(param: click.Parameter, value: Any) -> str:
    """The spelling the user typed (``--no-safe`` for a false ``--safe/--no-safe``)."""
    if param.secondary_opts and value is False:
        return param.secondary_opts[0]
    return param.opts[0]


def legacy_options(f: Callable) -> Callable:
    """Add the hidden old options of ``clickrank train`` to ``f``."""
    for item in reversed(LEGACY):
        kwargs: dict[str, Any] = dict(hidden=True, expose_value=False, callback=_record(item))
        if item.flag:
            kwargs.update(is_flag=True, default=None)
        else:
            kwargs.update(type=item.type, default=None)
        f = click.option(*item.decls, **kwargs)(f)
    return f


def legacy_params(ctx: click.Context) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """The parameters the old options set, the option that set each, and the target options
    (``strategy``, ``ips_weighted``) and tree shape (``num_leaves``, ``max_depth``) apart."""
    params: dict[str, Any] = {}
    sources: dict[str, str] = {}
    special: dict[str, Any] = {}
    for item, value in ctx.meta.get(_META, []):
        name = item.decls[0].split("/")[0]
        if item.key in ("strategy", "ips_weighted", *SHAPE_KEYS):
            special[item.key] = value
            continue
        for key, v in item.params(value).items():
            params[key] = v
            sources[key] = name
    return params, sources, special


# -- help in groups, as ruff and uv print it ----------------------------------------------------


class GroupedCommand(click.Command):
    """A command whose ``--help`` lists its options in titled groups (``groups``)."""

    def __init__(self, *args: Any, groups: dict[str, tuple[str, ...]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.groups = groups

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                records[param.name] = record
        placed = {name for names in self.groups.values() for name in names}
        groups = {**self.groups, "Other options": tuple(n for n in records if n not in placed)}
        for title, names in groups.items():
            rows = [records[n] for n in names if n in records]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)
