"""``clickrank simulate``: simulate a click log from labelled data."""

from __future__ import annotations

import math
import sys
import tomllib
from pathlib import Path
from typing import Any

import click

from .._core._budget import check_budget
from .._core._io import check_output, read_text
from .._core._validation import (
    ConfigError,
    DataFormatError,
    InputError,
    check_jobs,
    check_non_negative,
    check_probability,
)
from ..specs.names import (
    CLICK_MODELS,
    ETA_MODELS,
    INTERVENTION_FRACTIONS,
    POLICY_KINDS,
    RELEVANCE_MAPS,
)
from ._root import cli, out_option, top_k_option

#: Rough memory per document of the data (features as drawn and as float32, labels, ids,
#: the logger's scores and rankings) and per shown row of a chunk in flight (uniforms,
#: clicks, positions, the polars chunk); time per shown row (measured about 1.7e-7 s
#: on 2 cores: a lower bound).
DOC_BYTES = 256
ROW_BYTES = 160
ROW_SECONDS = 1e-7


def _load_config(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Read a TOML file of option defaults (keys are option names, ``-`` or ``_``)."""
    if value is None:
        return None
    try:
        raw = tomllib.loads(read_text(value, what="TOML"))
    except DataFormatError as err:
        raise click.BadParameter(str(err), param_hint="--config") from None
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise click.BadParameter(f"cannot read {value}: {err}", param_hint="--config") from None
    raw = raw.get("simulate", raw)  # either a [simulate] table or top-level keys
    known = {}  # option spelling (without "--", "_" for "-") -> parameter name
    for p in ctx.command.params:
        for opt in getattr(p, "opts", []):
            if opt.startswith("--") and p.name != "config":
                known[opt[2:].replace("-", "_")] = p.name
    defaults: dict[str, Any] = {}
    for key, val in raw.items():
        name = str(key).replace("-", "_")
        if name not in known:
            raise ConfigError(
                f"{value}: unknown key {key!r}; expected some of "
                f"{', '.join(sorted(k.replace('_', '-') for k in known))}"
            )
        defaults[known[name]] = val
    ctx.default_map = {**(ctx.default_map or {}), **defaults}
    ctx.meta["clickrank.config"] = value  # an input: never an output
    return value


class _ValueNumbers(click.ParamType):
    """``phone=0.3,desktop=0.7`` on the command line, or a TOML table in ``--config``:
    a dict value -> number, in the order given."""

    name = "VALUE=NUMBER,..."

    def convert(self, value: Any, param: Any, ctx: Any) -> dict[str, float]:
        if isinstance(value, dict):
            items = [(str(k), v) for k, v in value.items()]
        else:
            items = []
            for part in str(value).split(","):
                key, sep, num = part.partition("=")
                if not sep or not key.strip():
                    self.fail(f"expected VALUE=NUMBER pairs separated by commas, got {part!r}",
                              param, ctx)  # fmt: skip
                items.append((key.strip(), num.strip()))
        out: dict[str, float] = {}
        for key, num in items:
            if key in out:
                self.fail(f"names {key!r} twice", param, ctx)
            try:
                if isinstance(num, bool):
                    raise ValueError
                out[key] = float(num)
            except (TypeError, ValueError):
                self.fail(f"{key}={num!r} is not a number", param, ctx)
        return out


_VALUE_NUMBERS = _ValueNumbers()


def _given(ctx: click.Context, name: str) -> bool:
    src = ctx.get_parameter_source(name)
    return src is not None and src.name in ("COMMANDLINE", "DEFAULT_MAP", "ENVIRONMENT")


@cli.command()
@click.option(
    "--config",
    type=click.Path(exists=True, dir_okay=False),
    is_eager=True,
    expose_value=False,
    callback=_load_config,
    help="TOML file of option values (keys as option names); options given on "
    "the command line win.",
)
@click.option(
    "--data",
    "data_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Labelled LETOR/SVMlight file (e.g. MQ2008 Fold1/train.txt).",
)
@click.option(
    "--synthetic",
    "synthetic_queries",
    type=int,
    default=None,
    help="Use the synthetic data with this many queries instead of --data.",
)
@click.option("--docs-per-query", type=int, default=30, help="Documents per synthetic query.")
@click.option("--click-model", type=click.Choice(CLICK_MODELS), default="pbm", help="Click model.")
@click.option(
    "--eta",
    type=float,
    default=1.0,
    help="Position-bias severity: theta_p = (1/p)^eta (pbm, trust, ubm).",
)
@click.option(
    "--relevance",
    type=click.Choice(RELEVANCE_MAPS),
    default="graded",
    help="Label-to-click map: graded eps+(1-eps)(2^y-1)/(2^ymax-1), or binarized.",
)
@click.option(
    "--eps",
    type=float,
    default=0.1,
    help="Click noise: the click probability of an irrelevant document.",
)
@click.option(
    "--max-label",
    type=float,
    default=None,
    help="Top grade for the graded map and DBN/SDBN satisfaction [default: the "
    "largest label in the data].",
)
@click.option(
    "--threshold",
    type=float,
    default=None,
    help="Binarized map: labels >= threshold are relevant [default: 1 for labels up "
    "to 2 (MQ2008), else the largest label - 1 (3 for 0..4 labels)].",
)
@click.option(
    "--policy",
    type=click.Choice(POLICY_KINDS),
    default="production",
    help="Logging policy.",
)
@click.option(
    "--production-fraction",
    type=float,
    default=0.01,
    help="Share of queries the production ranker is trained on.",
)
@click.option(
    "--production-min-queries",
    type=int,
    default=20,
    help="...but at least this many queries (all if there are fewer).",
)
@click.option("--temperature", type=float, default=1.0, help="Plackett-Luce temperature.")
@click.option("--sessions", type=int, default=1_000_000, help="Number of sessions.")
@top_k_option(type=int, default=10, help="Results shown per session.")
@click.option(
    "--swap-fraction",
    type=float,
    default=0.0,
    help="Share of sessions with ranks 1 and k swapped (Joachims et al. 2017).",
)
@click.option(
    "--swap-k",
    type=int,
    default=None,
    help="Rank swapped with rank 1 [default: uniform over 2..top-k per session].",
)
@click.option(
    "--randpair-fraction",
    type=float,
    default=0.0,
    help="Share of sessions with a RandPair swap (Wang et al. 2018), pivot rank 1.",
)
@click.option(
    "--randomize-fraction",
    type=float,
    default=0.0,
    help="Share of sessions with the top --randomize-k shuffled.",
)
@click.option(
    "--fairpairs-fraction",
    type=float,
    default=0.0,
    help="Share of sessions with FairPairs swaps of adjacent ranks (Radlinski & Joachims 2006).",
)
@click.option(
    "--randomize-k",
    type=int,
    default=None,
    help="How many top results to shuffle [default: top-k].",
)
@click.option(
    "--context",
    "context_column",
    metavar="COLUMN",
    default=None,
    help="Simulate a context column (a device, a layout): each session draws a value "
    "from --context-shares, and each value clicks at its own --context-eta.",
)
@click.option(
    "--context-shares",
    type=_VALUE_NUMBERS,
    default=None,
    metavar="VALUE=SHARE,...",
    help="Each context value's share of the sessions, summing to 1 (phone=0.3,desktop=0.7).",
)
@click.option(
    "--context-eta",
    type=_VALUE_NUMBERS,
    default=None,
    metavar="VALUE=ETA,...",
    help="Each context value's position-bias severity, theta_p = (1/p)^eta (pbm, trust, "
    "ubm; phone=2,desktop=0.5) [default: --eta for every value].",
)
@click.option(
    "--context-concentration",
    type=float,
    default=None,
    metavar="KAPPA",
    help="Each query draws its own shares from Dirichlet(KAPPA x --context-shares) "
    "[default: every query has --context-shares].",
)
@click.option("--seed", type=int, default=0, help="Seed: same seed, same log.")
@click.option("--chunk-size", type=int, default=200_000, help="Sessions per chunk (memory).")
@click.option(
    "--jobs", type=int, default=1, help="Threads of the simulation (the log does not change)."
)
@out_option(
    "out",
    type=click.Path(dir_okay=True),
    required=True,
    help="Output: a .parquet file, or a folder of parquet parts.",
)
@click.option(
    "-f",
    "--force",
    is_flag=True,
    help="Replace --out if it exists and clickrank wrote it (never anything else).",
)
@click.option(
    "--skip-space-check",
    is_flag=True,
    help="Simulate even if the estimated size of the log exceeds the free disk space.",
)
@click.pass_context
def simulate(ctx: click.Context, **opts: Any) -> None:
    """Simulate a click log (session, query, position, doc, click, ...) to parquet.

    \b
    Examples:
      clickrank simulate --data Fold1/train.txt --sessions 1000000 --out log.parquet
      clickrank simulate --synthetic 1300 --click-model dbn --swap-fraction 0.1 \\
          --out log.parquet --force
      clickrank simulate --synthetic 1300 --swap-fraction 0.1 --context device \\
          --context-shares phone=0.3,desktop=0.7 --context-eta phone=2,desktop=0.5 \\
          --out devices.parquet
    """
    from ..policies.production import ProductionRanker, describe_quality
    from ..simulation import estimate_log_bytes
    from ..simulation import simulate as run
    from ..specs import make_click_model, make_interventions, make_policy

    out = Path(opts["out"])
    _check_options(ctx, opts)
    _say(_check_sizes(opts))
    need = 0 if opts["skip_space_check"] else estimate_log_bytes(opts["sessions"], opts["top_k"])
    check_output(
        out,
        force=opts["force"],
        what="--out",
        need_bytes=need,
        inputs=[opts["data_path"], ctx.meta.get("clickrank.config")],
        mkdir=False,
    )
    data = _load_data(opts)
    _check_chunk(opts, data)
    spec = {k: opts[k] for k in ("relevance", "eps", "eta", "max_label", "threshold")}
    model, rel_line = make_click_model(
        {"name": opts["click_model"], **spec}, data.y, names=("--max-label", "--threshold")
    )
    interventions = make_interventions(
        {k: opts[k] for k in (*INTERVENTION_FRACTIONS, "swap_k", "randomize_k")}
    )
    policy = make_policy(
        opts["policy"],
        data,
        fraction=opts["production_fraction"],
        min_queries=opts["production_min_queries"],
        temperature=opts["temperature"],
        seed=opts["seed"],
    )
    context = _context(opts, spec, data)
    click.echo(rel_line)
    ranker = getattr(policy, "ranker", None)
    meta = None
    if isinstance(ranker, ProductionRanker):
        if ranker.note_:
            click.echo(f"note: {ranker.note_}", err=True)
        quality = ranker.quality(data)
        meta = {"logger_quality": {policy.name: quality}, "relevance": rel_line}
        click.echo(describe_quality(quality))
    with click.progressbar(length=opts["sessions"], label="simulating", file=sys.stderr) as bar:
        log = run(
            data,
            policy=policy,
            click_model=model,
            n_sessions=opts["sessions"],
            interventions=interventions,
            top_k=opts["top_k"],
            seed=opts["seed"],
            chunk_size=opts["chunk_size"],
            n_jobs=opts["jobs"],
            out=out,
            overwrite=opts["force"],
            progress=bar.update,
            check_space=not opts["skip_space_check"],
            metadata=meta or {"relevance": rel_line},
            context=context,
        )
    _print_ctr(log, out, opts["sessions"])
    if context is not None:
        _print_context(log, context.name)


def _check_options(ctx: click.Context, opts: dict[str, Any]) -> None:
    """The checks of the options that need no data (one line each)."""
    if (opts["data_path"] is None) == (opts["synthetic_queries"] is None):
        raise click.UsageError("give exactly one of --data PATH or --synthetic N_QUERIES")
    model_name = opts["click_model"]
    if _given(ctx, "eta") and model_name not in ETA_MODELS:
        raise click.UsageError(f"--eta applies to {', '.join(ETA_MODELS)}, not {model_name}")
    if (
        opts["max_label"] is not None
        and opts["relevance"] != "graded"
        and model_name not in ("dbn", "sdbn")
    ):
        raise click.UsageError(
            "--max-label applies to --relevance graded (and to the satisfaction of dbn and sdbn)"
        )
    if opts["threshold"] is not None and opts["relevance"] != "binarized":
        raise click.UsageError("--threshold applies to --relevance binarized")
    check_non_negative(opts["eta"], name="--eta")
    check_probability(opts["eps"], name="--eps")
    for name in INTERVENTION_FRACTIONS:
        check_probability(opts[name], name="--" + name.replace("_", "-"))
    for name in (
        "sessions",
        "top_k",
        "chunk_size",
        "jobs",
        "docs_per_query",
        "production_min_queries",
    ):
        if opts[name] is not None and opts[name] < 1:
            raise InputError(f"--{name.replace('_', '-')} must be >= 1, got {opts[name]}")
    check_jobs(opts["jobs"], name="--jobs")
    for name in ("swap_k", "randomize_k"):  # as [interventions] swap_k, randomize_k
        if opts[name] is not None and not 2 <= opts[name] <= opts["top_k"]:
            raise InputError(
                f"--{name.replace('_', '-')} must be in 2..--top-k ({opts['top_k']}), "
                f"got {opts[name]}"
            )
    if not 0 < opts["production_fraction"] <= 1:
        raise InputError(
            f"--production-fraction must be in (0, 1], got {opts['production_fraction']}"
        )
    if opts["seed"] < 0:
        raise InputError(f"--seed must be >= 0, got {opts['seed']}")
    _check_context(opts)


def _check_context(opts: dict[str, Any]) -> None:
    """The --context options (one line each): a column that is not one of the log's own,
    two or more values with shares summing to 1, an η for each of them."""
    from ..simulation.context import RESERVED_COLUMNS

    column, shares, eta = opts["context_column"], opts["context_shares"], opts["context_eta"]
    if column is None:
        for name in ("context_shares", "context_eta", "context_concentration"):
            if opts[name] is not None:
                raise click.UsageError(f"--{name.replace('_', '-')} needs --context COLUMN")
        return
    if not column or column in RESERVED_COLUMNS:
        raise click.UsageError(f"--context {column!r} is a column of the log already; name "
                               f"another (not one of {', '.join(RESERVED_COLUMNS)})")  # fmt: skip
    if shares is None or len(shares) < 2:
        raise click.UsageError("--context needs --context-shares with two values or more "
                               "(phone=0.3,desktop=0.7)")  # fmt: skip
    bad = [v for v, x in shares.items() if not 0 < x <= 1]
    if bad:
        raise click.UsageError(f"--context-shares must be numbers in (0, 1]; {bad[0]} is "
                               f"{shares[bad[0]]:g}")  # fmt: skip
    if abs(sum(shares.values()) - 1) > 1e-9:
        raise click.UsageError(f"--context-shares must sum to 1, got {sum(shares.values()):g}")
    if eta is not None:
        if opts["click_model"] not in ETA_MODELS:
            raise click.UsageError(f"--context-eta applies to {', '.join(ETA_MODELS)}, not "
                                   f"{opts['click_model']}")  # fmt: skip
        if set(eta) != set(shares):
            raise click.UsageError(f"--context-eta must give each value of --context-shares "
                                   f"its eta: {', '.join(shares)}")  # fmt: skip
        for v, x in eta.items():
            check_non_negative(x, name=f"--context-eta {v}")
    kappa = opts["context_concentration"]
    if kappa is not None and not (math.isfinite(kappa) and kappa > 0):
        raise click.UsageError(f"--context-concentration must be a number > 0, got {kappa:g}")


def _context(opts: dict[str, Any], spec: dict[str, Any], data: Any) -> Any:
    """The :class:`~clickrank.simulation.Context` of the --context options, or None: each
    value clicks by --click-model at its --context-eta (or every value at --eta)."""
    from ..simulation import Context
    from ..specs import make_click_model

    if opts["context_column"] is None:
        return None
    eta = opts["context_eta"] or {}
    models = {v: make_click_model({"name": opts["click_model"], **spec, "eta": e}, data.y,
                                  names=("--max-label", "--threshold"))[0]
              for v, e in eta.items()}  # fmt: skip
    return Context(opts["context_column"], opts["context_shares"], models,
                   query_concentration=opts["context_concentration"])  # fmt: skip


def _say(note: str | None) -> None:
    if note:
        click.echo(note, err=True)


def _check_sizes(opts: dict[str, Any]) -> str | None:
    """Memory of --synthetic data and time of --sessions, before the work (one line each)."""
    if opts["synthetic_queries"] is not None and opts["synthetic_queries"] >= 1:
        docs = opts["synthetic_queries"] * opts["docs_per_query"]
        check_budget("--synthetic x --docs-per-query", docs, memory=docs * DOC_BYTES)
    rows = opts["sessions"] * opts["top_k"]
    return check_budget(
        "--sessions",
        opts["sessions"],
        memory=min(opts["sessions"], opts["chunk_size"]) * opts["top_k"] * ROW_BYTES,
        seconds=rows * ROW_SECONDS,
    )


def _check_chunk(opts: dict[str, Any], data: Any) -> None:
    """Memory of one chunk in flight (--chunk-size x --top-k), once the data is known."""
    top_k = min(opts["top_k"], int(max(data.qptr[1:] - data.qptr[:-1], default=1)))
    chunk = min(opts["sessions"], opts["chunk_size"])
    check_budget("--chunk-size x --top-k", chunk * top_k, memory=chunk * top_k * ROW_BYTES)


def _load_data(opts: dict[str, Any]) -> Any:
    """The labelled data: ``--data`` (LETOR) or ``--synthetic`` queries."""
    from ..datasets import load_letor, synthetic

    if opts["data_path"] is not None:
        data = load_letor(opts["data_path"])
    else:
        if opts["synthetic_queries"] < 1:
            raise InputError(f"--synthetic must be >= 1, got {opts['synthetic_queries']}")
        data = synthetic(opts["synthetic_queries"], opts["docs_per_query"], seed=opts["seed"])
    if data.y is None:
        raise InputError(f"{opts['data_path']}: the data has no labels to simulate clicks from")
    return data


def _print_context(log: Any, column: str) -> None:
    """Each context value's sessions and clicks per session (one line)."""
    import polars as pl

    lf = log if isinstance(log, pl.LazyFrame) else log.lazy()
    by = (
        lf.group_by(pl.col(column).cast(pl.String))
        .agg(sessions=(pl.col("position") == 1).sum(), clicks=pl.col("click").sum())
        .sort(column)
        .collect()
    )
    total = max(int(by["sessions"].sum()), 1)
    parts = [f"{r[column]} {r['sessions'] / total:.1%} of the sessions, "
             f"{r['clicks'] / max(r['sessions'], 1):.3f} clicks per session"
             for r in by.iter_rows(named=True)]  # fmt: skip
    click.echo(f"{column}: " + "; ".join(parts))


def _print_ctr(log: Any, out: Path, sessions: int) -> None:
    """What was written, and the click-through rate by position."""
    from ..clicklog import ctr_by_position

    table = ctr_by_position(log).collect()
    n_rows = int(table["impressions"].sum())
    n_clicks = int(table["clicks"].sum())
    click.echo(
        f"wrote {out}: {sessions:,} sessions, {n_rows:,} rows, "
        f"{n_clicks:,} clicks ({n_clicks / max(sessions, 1):.3f} per session)"
    )
    click.echo(f"{'position':>8} {'shown':>12} {'clicks':>10} {'CTR':>8} {'SE':>8}")
    for r in table.iter_rows(named=True):
        se = r["se"] if r["se"] is not None and not math.isnan(r["se"]) else 0.0
        click.echo(
            f"{r['position']:>8} {r['impressions']:>12,} {r['clicks']:>10,} "
            f"{r['ctr']:>8.4f} {se:>8.4f}"
        )
