"""Plumbing shared by the study scripts in ``simulations/``.

Only study plumbing lives here (command line, TOML config, the standard
synthetic set-up, aggregation over seeds, writing ``report.md`` and
``results.json``); every piece of ULTR logic comes from the ``clickrank``
library. Each study is ``python simulations/<name>/run.py [--quick] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import math
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.stats import t as student_t

import clickrank as cr
from clickrank._core._io import atomic_write, atomic_write_json, atomic_write_text
from clickrank.lambdamart import LambdaMART
from clickrank.policies import DeterministicPolicy
from clickrank.specs import make_click_model, make_lambdamart

ROOT = Path(__file__).resolve().parents[1]
CI_NOTE = (
    "(mean over seeds [95% t-interval over seeds; with a single seed, the test-query "
    "bootstrap interval])"
)


# -- command line and config ------------------------------------------------------------


def parse_args(name: str, doc: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """``--config`` (default: the study's ``config.toml``), ``--out``, ``--quick``."""
    here = Path(__file__).resolve().parent / name
    p = argparse.ArgumentParser(prog=f"simulations/{name}/run.py", description=doc)
    p.add_argument(
        "--config",
        type=Path,
        default=here / "config.toml",
        help="study parameters (TOML); default: %(default)s",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=ROOT / "results" / "studies" / name,
        help="folder for report.md, results.json and figures; default: %(default)s",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="the small settings of the config's [quick] table (< 1 minute)",
    )
    return p.parse_args(argv)


def load_config(path: Path, quick: bool) -> dict[str, Any]:
    """The TOML config; with ``quick`` the keys of its ``[quick]`` table override the rest."""
    with open(path, "rb") as fh:
        cfg = tomllib.load(fh)
    small = cfg.pop("quick", {})
    if quick:
        cfg = _merge(cfg, small)
    return cfg


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


# -- the standard set-up ----------------------------------------------------------------


@dataclass
class Setup:
    """Synthetic train/test queries, the production (logging) ranker and its policy."""

    train: cr.RankingData
    test: cr.RankingData
    production: Any
    policy: DeterministicPolicy


def synthetic_setup(cfg: dict[str, Any]) -> Setup:
    """DESIGN §4 synthetic data split by query and a production ranker on a few train queries."""
    d = cfg["data"]
    data = cr.synthetic(d["n_queries"], d["docs_per_query"], seed=d.get("seed", 0))
    train, test = cr.split_queries(data, [d["n_train"], d["n_test"]], seed=d.get("seed", 0))
    prod = cr.production_ranker(train, d.get("production_fraction", 0.01), seed=d.get("seed", 0))
    return Setup(train, test, prod, DeterministicPolicy(prod, name="production"))


def click_model(spec: dict[str, Any]) -> Any:
    """A click model from a config table ``{name = "pbm", eta = 1.0, ...}``."""
    return make_click_model(spec)[0]


def ranker(cfg: dict[str, Any], seed: int = 0) -> LambdaMART:
    """The study's LambdaMART (parameters from the config's ``[lambdamart]`` table)."""
    return make_lambdamart(cfg.get("lambdamart", {}), seed=seed)


def usable_theta(theta: Any) -> tuple[np.ndarray, int]:
    """Estimated θ with unidentified (NaN) or zero positions replaced by the value above them.

    Small logs leave some swap positions without a click (θ̂ = 0, interval
    [0, inf)), and :func:`clickrank.targets.ips` rightly refuses to divide by
    it. The studies carry the estimate of the position above forward and report
    how many positions needed it. (The library has no such fallback; a
    monotone or parametric smoothing of θ̂ would be the principled version.)
    """
    th = np.asarray(getattr(theta, "theta", theta), float).copy()
    bad = ~np.isfinite(th) | (th <= 0)
    for p in np.flatnonzero(bad):  # at most K - 1 positions
        th[p] = th[p - 1] if p > 0 else 1.0
    return th, int(bad.sum())


# -- evaluation rows and aggregation over seeds -------------------------------------------


def eval_rows(
    models: dict[str, Any], test: cr.RankingData, metric: str, n_bootstrap: int, **columns: Any
) -> pl.DataFrame:
    """One row per model: ``method``, the extra ``columns``, ``mean``, ``ci_low``, ``ci_high``.

    The interval is :func:`clickrank.evaluate`'s query-level bootstrap on the test queries.
    """
    t = cr.evaluate(models, test, [metric], n_bootstrap=n_bootstrap).to_frame()
    extra = {k: [v] * t.height for k, v in columns.items()}
    return pl.DataFrame(
        {
            "method": t["ranker"],
            **extra,
            "mean": t["mean"],
            "ci_low": t["ci_low"],
            "ci_high": t["ci_high"],
        }
    )


def over_seeds(rows: pl.DataFrame, keys: Sequence[str], level: float = 0.95) -> pl.DataFrame:
    """Mean over seeds per ``keys`` with a Student-t interval over seeds.

    ``lower``/``upper`` are the t interval when there are at least two seeds,
    else the single run's bootstrap interval; ``boot_halfwidth`` is the mean
    half-width of the per-run test-query bootstrap intervals (the test-set part
    of the uncertainty, which the seeds do not vary).
    """
    g = rows.group_by(list(keys), maintain_order=True).agg(
        pl.col("mean").alias("runs"), pl.col("ci_low").mean(), pl.col("ci_high").mean()
    )
    means, lo, hi, sd, n = [], [], [], [], []
    for runs, cl, ch in zip(g["runs"].to_list(), g["ci_low"], g["ci_high"], strict=True):
        v = np.asarray(runs, float)
        m = float(v.mean())
        if v.size >= 2:
            s = float(v.std(ddof=1))
            h = float(student_t.ppf(0.5 + level / 2, v.size - 1)) * s / math.sqrt(v.size)
            lo.append(m - h)
            hi.append(m + h)
        else:
            s = float("nan")
            lo.append(cl)
            hi.append(ch)
        means.append(m)
        sd.append(s)
        n.append(v.size)
    return g.select(list(keys)).with_columns(
        mean=pl.Series(means),
        lower=pl.Series(lo),
        upper=pl.Series(hi),
        sd=pl.Series(sd),
        seeds=pl.Series(n, dtype=pl.Int64),
        boot_halfwidth=((g["ci_high"] - g["ci_low"]) / 2),
    )


def paired_difference(
    rows: pl.DataFrame, a: str, b: str, keys: Sequence[str], level: float = 0.95
) -> pl.DataFrame:
    """Per ``keys``: mean over seeds of ``a - b`` (same log, same test set) with a t interval."""
    keys = [k for k in keys if k not in ("method", "seed")]
    wide = (
        rows.filter(pl.col("method").is_in([a, b]))
        .pivot(on="method", index=[*keys, "seed"], values="mean")
        .with_columns(diff=pl.col(a) - pl.col(b))
    )
    # one seed gives no interval for a difference (NaN), not a zero-width one
    wide = wide.with_columns(
        method=pl.lit(f"{a} - {b}"), ci_low=pl.lit(float("nan")), ci_high=pl.lit(float("nan"))
    ).rename({"diff": "mean"})
    return over_seeds(
        wide.select("method", *keys, "mean", "ci_low", "ci_high"), ["method", *keys], level
    )


# -- output -------------------------------------------------------------------------------


def md_table(frame: pl.DataFrame, digits: int = 3, plain: Sequence[str] = ("eta",)) -> str:
    """A polars frame as a GitHub markdown table (floats rounded; ``plain`` columns as ``:g``)."""
    frame = frame.with_columns(
        pl.col(c).map_elements(lambda x: f"{x:g}", return_dtype=pl.String)
        for c in plain
        if c in frame.columns and frame.schema[c].is_float()
    )

    def fmt(v: Any) -> str:
        if v is None:
            return "–"
        if isinstance(v, float):
            if math.isnan(v):
                return "–"
            if abs(v) >= 1000 and float(v).is_integer():
                return f"{int(v):,}"
            return f"{v:.{digits}f}"
        if isinstance(v, int) and abs(v) >= 1000:
            return f"{v:,}"
        return str(v)

    head = "| " + " | ".join(frame.columns) + " |"
    sep = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in frame.iter_rows()]
    return "\n".join([head, sep, *body])


def wide_ci(frame: pl.DataFrame, index: str) -> pl.DataFrame:
    """An :func:`over_seeds` frame as one row per ``index`` value, one ``mean [lo, hi]`` column
    per method (methods in order of appearance)."""
    cells = [
        f"{m:.3f} [{lo:.3f}, {hi:.3f}]"
        for m, lo, hi in zip(frame["mean"], frame["lower"], frame["upper"], strict=True)
    ]
    methods = list(dict.fromkeys(frame["method"].to_list()))
    wide = (
        frame.with_columns(cell=pl.Series(cells))
        .pivot(on="method", index=index, values="cell")
        .sort(index)
    )
    if wide.schema[index].is_float():
        wide = wide.with_columns(pl.Series(index, [f"{x:g}" for x in wide[index]]))
    return wide.select(index, *methods)


def significant_from(diff: pl.DataFrame, x: str) -> tuple[bool, Any]:
    """``(tested, first x where the paired interval lies above 0)`` of a difference frame."""
    if diff.height == 0 or int(diff["seeds"].min()) < 2:
        return False, None
    sig = diff.filter(pl.col("lower") > 0).sort(x)
    return True, (sig[x][0] if sig.height else None)


def ci_text(frame: pl.DataFrame, method: str, **where: Any) -> str:
    """``"0.812 [0.801, 0.823]"`` for one row of an :func:`over_seeds` frame."""
    f = frame.filter(pl.col("method") == method)
    for k, v in where.items():
        f = f.filter(pl.col(k) == v)
    if f.height != 1:
        return "n/a"
    r = f.row(0, named=True)
    return f"{r['mean']:.3f} [{r['lower']:.3f}, {r['upper']:.3f}]"


def value(frame: pl.DataFrame, method: str, column: str = "mean", **where: Any) -> float:
    """One number of an aggregated frame (NaN if the row is missing)."""
    f = frame.filter(pl.col("method") == method)
    for k, v in where.items():
        f = f.filter(pl.col(k) == v)
    return float(f[column][0]) if f.height == 1 else float("nan")


def save_figure(fig: Any, path: Path, dpi: int = 100) -> Path:
    """Write a matplotlib figure as PNG atomically (tight layout)."""
    fig.tight_layout()
    return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi))


def new_figure(ncols: int = 1, nrows: int = 1, size: tuple[float, float] = (6.6, 4.3)):
    """A pyplot-free figure with ``nrows x ncols`` axes (as ``clickrank.plots`` does)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(size[0] * ncols, size[1] * nrows), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes.ravel()


def write_outputs(out: Path, name: str, report: str, results: dict[str, Any]) -> None:
    """``report.md`` and ``results.json`` into ``out`` (atomic writes)."""
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "report.md", report)
    atomic_write_json(out / "results.json", {"study": name, **results})


def frame_records(frame: pl.DataFrame) -> list[dict[str, Any]]:
    """JSON-ready rows (NaN -> None)."""
    rows = frame.to_dicts()
    return [
        {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
        for r in rows
    ]


class Clock:
    """Wall time since creation, for the reports."""

    def __init__(self) -> None:
        self.start = time.perf_counter()

    def seconds(self) -> float:
        return round(time.perf_counter() - self.start, 1)


def header(title: str, name: str, quick: bool, cfg_path: Path, seconds: float) -> str:
    """The first lines of every report: title, command, runtime."""
    cmd = f"python simulations/{name}/run.py" + (" --quick" if quick else "")
    mode = "quick mode (small settings; numbers are not the study's)" if quick else "full size"
    return (
        f"# {title}\n\nCommand: `{cmd}` ({mode}; config `{cfg_path.name}`); "
        f"wall time {seconds:.0f} s; clickrank {cr.__version__}.\n"
    )
