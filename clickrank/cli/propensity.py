"""``clickrank propensity``: estimate position bias from a click log, with intervals."""

from __future__ import annotations

import sys

import click

from .._core._io import check_output
from .._core._validation import check_alpha
from ..engine.cli import check_log_source, engine_options, is_table, open_log
from ..specs.names import PROPENSITY_METHODS
from ._root import cli, out_option, top_k_option

_METHODS = PROPENSITY_METHODS


def describe_log(log: str) -> list[str]:
    """What a simulated log's metadata says about it (none for other logs), for stderr."""
    from ..clicklog import read_log_metadata
    from ..policies.production import describe_quality

    meta = read_log_metadata(log)
    if not meta or meta.get("format") != "clickrank.log":
        return []
    lines = [
        f"log: {meta.get('sessions', 0):,} sessions simulated by clickrank "
        f"{meta.get('clickrank', '?')} from {meta.get('data') or 'unnamed data'} "
        f"(seed {meta.get('seed')})"
    ]
    if meta.get("relevance"):
        lines.append(f"log: {meta['relevance']}")
    for name, q in (meta.get("logger_quality") or {}).items():
        try:
            lines.append(f"log: {describe_quality(q, name=f'{name} ranker')}")
        except (KeyError, TypeError):  # written by hand or by another version
            continue
    return lines


def _read(log: str, context: tuple[str, ...] | None = None,
          features: tuple[str, ...] | None = None):  # fmt: skip
    """Scan and check the log, with a progress bar over its rows (the check streams);
    the ``context`` columns and context ``features`` first, from the schema alone."""
    import polars as pl

    from ..clicklog import read_log
    from ..propensity import check_context, check_features

    lf = read_log(log, validate=False)
    if context is not None:
        check_context(lf, context)
    if features is not None:
        check_features(lf, features)
    rows = lf.select(pl.len()).collect().item()
    with click.progressbar(length=rows, label=f"checking {rows:,} rows", file=sys.stderr) as bar:
        return read_log(log, progress=bar.update)


#: Rough memory per bootstrap replicate and position (log theta, its finite copy and the
#: temporaries of the interval), the fewest positions assumed without --top-k, and the
#: least time of one replicate's fit.
_REPLICATE_BYTES = 32
_MIN_POSITIONS = 10
_REPLICATE_SECONDS = 2e-4


def _check_bootstrap(method: str, n_boot: int | None, K: int | None) -> None:
    """--bootstrap: memory and time of the replicates, before the work (one line)."""
    from .._core._budget import check_budget
    from .._core._validation import InputError

    if n_boot is not None and n_boot < 0:
        raise InputError(f"--bootstrap must be >= 0, got {n_boot}")
    n = n_boot if n_boot is not None else (100 if method == "em" else 0)
    positions = K if K is not None and K > 0 else _MIN_POSITIONS
    option, value = ("--bootstrap", n) if K is None else ("--bootstrap x --top-k", n * positions)
    note = check_budget(
        option, value, memory=n * positions * _REPLICATE_BYTES, seconds=n * _REPLICATE_SECONDS
    )
    if note:
        click.echo(note, err=True)


def _passive(lf, method, name, data, n_boot, seed, kw):
    """Regression EM, or auto's sources without randomization (``name``: EM or regression
    EM), with a progress bar over the bootstrap replicates (EM: session buckets;
    regression EM: queries, none by default: its sandwich interval needs no refits)."""
    from ..propensity import estimate_propensities

    n = (100 if name == "em" else 0) if n_boot is None else n_boot
    if n == 0:
        return estimate_propensities(lf, method=method, data=data, n_boot=0, seed=seed, **kw)
    with click.progressbar(length=n, label=f"{name}: bootstrap", file=sys.stderr) as bar:
        return estimate_propensities(lf, method=method, data=data, n_boot=n, seed=seed,
                                     progress=bar.update, **kw)  # fmt: skip


def _bootstrapped(lf, method, n_boot, seed, kw):
    """A randomized estimator or EM with its bootstrap replicates, under a progress bar."""
    from ..propensity import bootstrap, estimate_propensities

    n = (100 if n_boot is None else n_boot) if method == "em" else n_boot
    click.echo(f"{method}: sufficient statistics per session bucket (one pass over the log), "
               f"then {n} bootstrap replicates", err=True)  # fmt: skip
    with click.progressbar(length=n, label="bootstrap", file=sys.stderr) as bar:
        if method == "em":
            return estimate_propensities(lf, method="em", n_boot=n, seed=seed,
                                         progress=bar.update, **kw)  # fmt: skip
        return bootstrap(method, lf, n=n, seed=seed, progress=bar.update, **kw)


def _context_columns(values: tuple[str, ...]) -> tuple[str, ...] | None:
    """``--context`` (repeated, each comma-separated) as column names; None when not given."""
    return tuple(c.strip() for v in values for c in v.split(",")) if values else None


#: Methods whose intervals come from bootstrap replicates (``--bootstrap`` sets how many).
_BOOTSTRAPPED = ("em", "regression-em", "auto")


def _by_context(lf, method, context, data, n_boot, seed, kw):
    """``--context``: the pooled curve and each context's (one pass over the log split by
    context; regression EM fits again on each context's sessions)."""
    from ..propensity import estimate_propensities

    how = {"regression-em": "on the whole log, then on each context's sessions",
           "auto": "from the source chosen on the whole log"}.get(
        method, "one pass over the log, split by context")  # fmt: skip
    click.echo(f"{method}: θ per context of {', '.join(context)} ({how})", err=True)
    extra = {"data": data} if method in ("auto", "regression-em") else {}
    if method in _BOOTSTRAPPED:
        extra.update(seed=seed, **({} if n_boot is None else {"n_boot": n_boot}))
    return estimate_propensities(lf, method=method, context=context, **extra, **kw)


def _auto(lf, log, data, n_boot, seed, kw):
    """``--method auto``: the strongest source the log supports, handing over to the next
    one when a randomized design leaves positions unidentified (``info["source"]`` says
    which, and why)."""
    from dataclasses import replace

    from .._core._validation import EstimationError
    from ..propensity import estimate_propensities, source_and_cells

    source, cells = source_and_cells(lf, data, kw.get("K"))
    if source.kind == "none":
        hint = "; pass --data (the documents' features) for regression EM" if data is None \
            else ""  # fmt: skip
        raise EstimationError(f"no propensity source in {log}: {source.reason}{hint}")
    click.echo(f"auto: {source.method} ({source.reason})", err=True)
    if source.kind != "randomized":
        # auto reuses the cell statistics its choice read: one aggregation of the log
        return _passive(lf, "auto", source.method, data, n_boot, seed, {**kw, "cells": cells})
    click.echo(f"{source.method}: sufficient statistics (one pass over the log)", err=True)
    result = estimate_propensities(lf, method="auto", data=data, seed=seed, n_boot=0, **kw)
    got = result.info["source"]
    if got["kind"] != "randomized":  # the design gave way: the passive source, as chosen
        n = (100 if got["method"] == "em" else 0) if n_boot is None else n_boot
        return result if n == 0 else _passive(lf, "auto", got["method"], data, n, seed, kw)
    if not n_boot:
        return result
    boot = _bootstrapped(lf, got["method"], n_boot, seed, kw)
    return replace(boot, info={**boot.info, "source": got})


@cli.command()
@click.argument("log", callback=check_log_source)
@click.option(
    "--method",
    type=click.Choice(_METHODS),
    default="auto",
    help="Propensity estimator (see docs/propensity.md); auto (default) picks it from what "
    "the log holds: randomized interventions, else EM where documents appear at several "
    "positions, else regression EM on --data's features (docs/logs.md).",
)
@click.option(
    "--data",
    "data_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="LETOR file of the logged documents: their features, for regression-em (and auto "
    "when nothing else in the log identifies θ). Labels are never read.",
)
@out_option(
    "out",
    type=click.Path(dir_okay=False),
    required=True,
    help="Write the estimate here as JSON (theta, lower, upper, se, ...).",
)
@click.option(
    "--plot",
    "plot_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also save a PNG of θ with its confidence band.",
)
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    help="Intervals have level 1 - alpha (in the printed table and the JSON).",
)
@top_k_option(
    "K",
    deprecated=("-K", "--positions"),
    type=int,
    default=None,
    help="Positions to estimate (randomized: the shuffled depth k, needed when only "
    "the top k < displayed results were shuffled).",
)
@click.option(
    "--bootstrap",
    "n_boot",
    type=int,
    default=None,
    help="Session-bootstrap replicates: the interval of em (default 100); for other "
    "methods replaces their analytic interval (regression-em: query-bootstrap replicates "
    "instead of its sandwich interval).",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, help="Seed of the bootstrap.")
@click.option(
    "--context",
    "context_values",
    metavar="COLUMN",
    multiple=True,
    help="Context column of the log (device, layout, ...; repeat it or separate names "
    "by commas): also estimate one curve per context (each combination of values), shrunk "
    "toward the common one, and test whether one curve is enough. For swap, randpair, and "
    "auto when it chooses one of them.",
)
@click.option(
    "--context-features",
    "feature_values",
    metavar="COLUMN",
    multiple=True,
    help="Numeric columns describing each session's context, for a context with too many "
    "values for a curve each (repeat it or separate names by commas): model log θ as "
    "linear in them, with intervals and a test of no effect: by EM's likelihood with "
    "--method em (or auto where documents moved), else the method's curve as the level "
    "and the slopes within documents.",
)
@click.option(
    "-f",
    "--force",
    is_flag=True,
    help="Replace OUT (and the plot) if clickrank wrote them (never anything else).",
)
@engine_options
def propensity(log, method, out, plot_path, alpha, K, n_boot, seed, context_values,
               feature_values, force, data_path, engine, spark_master):  # fmt: skip
    """Estimate examination propensities θ_p from a click LOG (parquet file, folder or CSV;
    with --engine spark, what Spark reads: a parquet folder, a URI or table:db.name)."""
    from ..propensity import estimate_propensities

    check_alpha(alpha, name="--alpha")
    context = _context_columns(context_values)
    if context is not None and n_boot and method not in _BOOTSTRAPPED:
        raise click.UsageError(f"--bootstrap with --context applies to --method "
                               f"{', '.join(_BOOTSTRAPPED)} (each context's interval is "
                               f"{method}'s own)")  # fmt: skip
    features = _context_columns(feature_values)
    if features is not None and (context is not None or engine == "spark"):
        raise click.UsageError(
            "--context-features is fitted on a local log, without --context or --engine spark"
        )
    if features is not None and n_boot and method not in _BOOTSTRAPPED:
        raise click.UsageError(f"--bootstrap with --context-features applies to --method "
                               f"{', '.join(_BOOTSTRAPPED)}")  # fmt: skip
    _check_bootstrap(method, n_boot, K)
    if method == "regression-em" and data_path is None:
        raise click.UsageError("--method regression-em needs --data (the documents' features)")
    if data_path is not None and method not in ("regression-em", "auto"):
        raise click.UsageError(f"--data is read by --method regression-em and auto, not {method}")
    inputs = ([] if is_table(log) else [log]) + ([] if data_path is None else [data_path])
    check_output(out, force=force, what="--out", inputs=inputs)
    if plot_path is not None:
        check_output(plot_path, force=force, what="--plot", inputs=[*inputs, out])
    kw = {} if K is None else {"K": K}
    lf = open_log(log, spark_master) if engine == "spark" else _read(log, context, features)
    for line in [] if is_table(log) else describe_log(log):
        click.echo(line, err=True)
    data = None
    if data_path is not None:
        from ..datasets import load_letor

        data = load_letor(data_path)
    if features is not None:
        click.echo(f"{method}: θ as a function of {', '.join(features)} (the pooled curve "
                   "and its interval, then the model)", err=True)  # fmt: skip
        own = {} if method not in _BOOTSTRAPPED else {
            "seed": seed, **({} if n_boot is None else {"n_boot": n_boot}),
            **({} if data is None else {"data": data})}  # fmt: skip
        result = estimate_propensities(lf, method=method, context_features=features, **own, **kw)
    elif context is not None:
        result = _by_context(lf, method, context, data, n_boot, seed, kw)
    elif method == "auto":
        result = _auto(lf, log, data, n_boot, seed, kw)
    elif method == "regression-em":
        result = _passive(lf, method, method, data, n_boot, seed, kw)
    elif method == "em" or n_boot:
        result = _bootstrapped(lf, method, n_boot, seed, kw)
    else:
        click.echo(f"{method}: sufficient statistics (one pass over the log)", err=True)
        result = estimate_propensities(lf, method=method, **kw)
    if method == "auto":
        got = result.info["source"]
        click.echo(f"propensities: {got['method']} ({got['reason']}), {got['guarantee']}",
                   err=True)  # fmt: skip
    result.save(out, alpha=alpha)
    if plot_path is not None:
        import matplotlib.pyplot as plt

        plt.close(result.plot(path=plot_path, alpha=alpha))
    click.echo(result.summary(alpha))
    click.echo(f"wrote {out} (θ with its {100 * (1 - alpha):g}% intervals, JSON)", err=True)
    if plot_path is not None:
        by = "" if result.contexts is None else " and context"
        click.echo(f"wrote {plot_path} (θ by position{by}, PNG)", err=True)
