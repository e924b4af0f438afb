r"""Offline evaluation with honest statistics, paired comparisons and counterfactual click metrics.

- :func:`evaluate` scores one or several rankers on labelled queries with
  every metric of :mod:`clickrank.metrics`, and attaches query-level bootstrap
  confidence intervals (percentile method; queries are the independent unit).
- :func:`compare` is the paired comparison of two rankers on one metric:
  paired t-test, sign-flip randomization test, Cohen's :math:`d_z` and CIs.
- :func:`counterfactual` is the IPS estimate, from a logged click log and
  propensities, of a *new* ranker's click-based utility (Joachims et al.
  (2017), §4).

Empty queries (no relevant document) follow the ``empty`` convention of
:mod:`clickrank.metrics` ("skip" by default); their number is reported next
to every mean.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import polars as pl
from scipy import stats

from ._core._result import Result
from ._core._segments import ranks as _ranks
from ._core._validation import (
    EstimationError,
    InputError,
    LogSchemaError,
    check_alpha,
    check_positive,
    check_probability,
)
from .datasets import RankingData

__all__ = [
    "evaluate",
    "compare",
    "counterfactual",
    "EvaluationResult",
    "ComparisonResult",
    "CounterfactualResult",
    "bootstrap_means",
    "load_scores",
    "paired_test",
]

_MAX_CELLS = 20_000_000  # bootstrap / permutation matrices are built in blocks of this size


def _named(rankers: Any) -> dict[str, Any]:
    if isinstance(rankers, Mapping):
        out = {str(k): v for k, v in rankers.items()}
    elif isinstance(rankers, np.ndarray) or hasattr(rankers, "predict"):
        out = {"ranker": rankers}
    elif isinstance(rankers, Sequence) and not isinstance(rankers, str):
        out = {f"ranker{i}": r for i, r in enumerate(rankers)}
    else:
        raise InputError("rankers must be a ranker, a score array, a list or a dict name -> ranker")
    if not out:
        raise InputError("no rankers given")
    return out


def bootstrap_means(values: np.ndarray, *, n_bootstrap: int = 1000, seed: int = 0) -> np.ndarray:
    r"""Query-level bootstrap replicates of the mean of each column, skipping NaN.

    Replicate :math:`b` draws multinomial weights :math:`w_b \sim
    \mathrm{Mult}(n, \mathbf 1/n)` over the ``n`` queries (one resample of
    queries with replacement) and computes
    :math:`\sum_q w_{bq} v_q [v_q \ne \mathrm{NaN}] / \sum_q w_{bq} [v_q \ne \mathrm{NaN}]`
    for every column at once (matrix products, no loop over replicates beyond
    memory blocks). The same weights serve all columns, so differences between
    columns are paired.

    Parameters
    ----------
    values : float array ``[n_queries]`` or ``[n_queries, m]``
    n_bootstrap : int
    seed : int

    Returns
    -------
    numpy.ndarray ``[n_bootstrap, m]``
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[:, None] if v.ndim == 1 else v
    n = v.shape[0]
    B = check_positive(n_bootstrap, name="n_bootstrap", integer=True)
    if n == 0:
        raise InputError("cannot bootstrap an empty set of queries")
    valid = ~np.isnan(v)
    vz = np.where(valid, v, 0.0)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(11,)))
    out = np.empty((B, v.shape[1]))
    block = max(1, _MAX_CELLS // n)
    p = np.full(n, 1.0 / n)
    for s in range(0, B, block):
        w = rng.multinomial(n, p, size=min(block, B - s)).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[s : s + len(w)] = (w @ vz) / (w @ valid)
    return out


# --------------------------------------------------------------------------- paired comparison


@dataclass(frozen=True, eq=False)
class ComparisonResult(Result):
    """Paired comparison of rankers A and B on one metric over the same queries.

    ``diff`` = mean over queries of (A − B); tests are two-sided.
    """

    FORMAT: ClassVar[str] = "clickrank.comparison"

    a: str
    b: str
    metric: str
    n_queries: int
    mean_a: float
    mean_b: float
    diff: float
    sd_diff: float
    cohen_dz: float
    t_stat: float
    t_p_value: float
    t_ci: tuple[float, float]
    randomization_p_value: float
    n_permutations: int
    bootstrap_ci: tuple[float, float]
    alpha: float

    def summary(self) -> str:
        pct = f"{100 * (1 - self.alpha):.0f}%"
        return "\n".join(
            [
                f"Paired comparison on {self.metric}: {self.a} vs {self.b} "
                f"({self.n_queries} queries)",
                f"  mean {self.a:<12} {self.mean_a:.5f}",
                f"  mean {self.b:<12} {self.mean_b:.5f}",
                f"  difference ({self.a} − {self.b})  {self.diff:+.5f}   sd {self.sd_diff:.5f}   "
                f"Cohen's d_z {self.cohen_dz:+.3f}",
                f"  paired t-test       t = {self.t_stat:.3f}, p = {self.t_p_value:.3g}, "
                f"{pct} CI [{self.t_ci[0]:+.5f}, {self.t_ci[1]:+.5f}]",
                f"  randomization test  p = {self.randomization_p_value:.3g} "
                f"({self.n_permutations} sign flips)",
                f"  bootstrap {pct} CI    "
                f"[{self.bootstrap_ci[0]:+.5f}, {self.bootstrap_ci[1]:+.5f}]",
            ]
        )

    def to_dict(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, d: dict) -> ComparisonResult:
        f = cls._fields_in(d)
        f["t_ci"], f["bootstrap_ci"] = tuple(f["t_ci"]), tuple(f["bootstrap_ci"])
        return cls(**f)

    def conf_int(self, alpha: float | None = None) -> pl.DataFrame:
        """Intervals for the mean difference A − B: the paired t interval and the bootstrap one.

        The t interval is recomputed for any ``alpha`` (from ``sd_diff`` and
        ``n_queries``); the bootstrap percentile interval exists only at the
        result's own ``alpha`` (NaN otherwise: the resamples are not kept).
        Columns ``method``, ``estimate``, ``lower``, ``upper``, ``alpha``.
        """
        a = self.alpha if alpha is None else check_alpha(alpha)
        h = stats.t.isf(a / 2, self.n_queries - 1) * self.sd_diff / math.sqrt(self.n_queries)
        boot = self.bootstrap_ci if a == self.alpha else (math.nan, math.nan)
        return pl.DataFrame(
            {
                "method": ["paired t", "bootstrap percentile"],
                "estimate": [self.diff, self.diff],
                "lower": [self.diff - h, boot[0]],
                "upper": [self.diff + h, boot[1]],
                "alpha": [a, a],
            }
        )


def _nan_list(values: Any) -> list:
    return [
        None if isinstance(x, float) and math.isnan(x) else x for x in np.asarray(values).tolist()
    ]


def paired_test(
    va: Any,
    vb: Any,
    *,
    a: str = "A",
    b: str = "B",
    metric: str = "metric",
    alpha: float = 0.05,
    n_permutations: int = 10_000,
    n_bootstrap: int = 1000,
    seed: int = 0,
) -> ComparisonResult:
    r"""Paired t-test, sign-flip randomization test and effect size on per-query values.

    Queries where either value is NaN (skipped) are dropped. Randomization
    test (Fisher's sign flip): under H0 each per-query difference is
    symmetric about 0, so the p-value is
    :math:`(1 + \#\{|\bar d^{(b)}| \ge |\bar d|\}) / (1 + P)` over :math:`P`
    random sign vectors. Cohen's :math:`d_z = \bar d / s_d`.
    """
    va, vb = np.asarray(va, dtype=np.float64), np.asarray(vb, dtype=np.float64)
    if va.shape != vb.shape or va.ndim != 1:
        raise InputError(
            f"per-query values must be 1-d of equal length, got {va.shape} and {vb.shape}"
        )
    keep = ~(np.isnan(va) | np.isnan(vb))
    d = va[keep] - vb[keep]
    n = d.size
    if n < 2:
        raise InputError(f"need at least 2 queries with values for both rankers, got {n}")
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    if se > 0:
        t = mean / se
        p_t = float(2 * stats.t.sf(abs(t), n - 1))
    else:
        t, p_t = (0.0, 1.0) if mean == 0 else (math.copysign(math.inf, mean), 0.0)
    h = stats.t.isf(alpha / 2, n - 1) * se
    P = check_positive(n_permutations, name="n_permutations", integer=True)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(12,)))
    hits = 0
    block = max(1, _MAX_CELLS // n)
    obs = abs(mean) - 1e-12 * max(1.0, abs(mean))
    for s in range(0, P, block):
        signs = rng.integers(0, 2, size=(min(block, P - s), n), dtype=np.int8) * 2 - 1
        hits += int((np.abs(signs @ d) / n >= obs).sum())
    boot = bootstrap_means(d, n_bootstrap=n_bootstrap, seed=seed)[:, 0]
    lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
    return ComparisonResult(
        a,
        b,
        metric,
        n,
        float(va[keep].mean()),
        float(vb[keep].mean()),
        mean,
        sd,
        mean / sd if sd > 0 else (0.0 if mean == 0 else math.copysign(math.inf, mean)),
        float(t),
        p_t,
        (mean - h, mean + h),
        (1 + hits) / (1 + P),
        P,
        (float(lo), float(hi)),
        alpha,
    )


# --------------------------------------------------------------------------- evaluate


@dataclass(frozen=True, eq=False)
class EvaluationResult(Result):
    """Metric values per query and per ranker, with bootstrap confidence intervals.

    Attributes
    ----------
    rankers, metrics : tuple of str
    values : dict (ranker, metric) -> float array ``[n_queries]`` (NaN = skipped)
    qid : array ``[n_queries]``
    table : polars.DataFrame, one row per ranker × metric: mean, se, ci_low,
        ci_high, n_queries, n_used, n_empty, empty
    alpha, n_bootstrap, seed, empty
    """

    rankers: tuple[str, ...]
    metrics: tuple[str, ...]
    values: dict
    qid: np.ndarray
    table: pl.DataFrame
    alpha: float
    n_bootstrap: int
    seed: int
    empty: str
    data_name: str = ""
    notes: tuple[str, ...] = field(default=())

    FORMAT: ClassVar[str] = "clickrank.evaluation"

    def to_frame(self) -> pl.DataFrame:
        """The ranker × metric table (means, CIs, counts)."""
        return self.table

    def per_query(self) -> pl.DataFrame:
        """Long table: query, ranker, metric, value (NaN where skipped)."""
        parts = [
            pl.DataFrame(
                {"query": self.qid, "ranker": r, "metric": m, "value": self.values[(r, m)]}
            )
            for r in self.rankers
            for m in self.metrics
        ]
        return pl.concat(parts)

    def conf_int(self, alpha: float | None = None) -> pl.DataFrame:
        """Bootstrap percentile intervals of each mean, one row per ranker × metric.

        Columns ``ranker``, ``metric``, ``estimate`` (the mean), ``lower``,
        ``upper``, ``alpha`` (rows in :meth:`to_frame` order). At another
        ``alpha`` than the result's, the same seeded query-level resamples are
        drawn again.
        """
        a = self.alpha if alpha is None else check_alpha(alpha)
        if a == self.alpha:
            bounds = self.table.select("ci_low", "ci_high").to_numpy()
        else:
            cols = np.column_stack(
                [self.values[(r, m)] for r in self.rankers for m in self.metrics]
            )
            boot = bootstrap_means(cols, n_bootstrap=self.n_bootstrap, seed=self.seed)
            bounds = np.nanquantile(boot, [a / 2, 1 - a / 2], axis=0).T
        return self.table.select("ranker", "metric", pl.col("mean").alias("estimate")).with_columns(
            lower=pl.Series(bounds[:, 0]), upper=pl.Series(bounds[:, 1]), alpha=pl.lit(a)
        )

    def compare(
        self, a: str, b: str, metric: str | None = None, *, n_permutations: int = 10_000
    ) -> ComparisonResult:
        """Paired comparison of two evaluated rankers on one metric (see :func:`compare`)."""
        metric = self.metrics[0] if metric is None else metric
        for name, pool in ((a, self.rankers), (b, self.rankers), (metric, self.metrics)):
            if name not in pool:
                raise InputError(f"{name!r} is not one of {', '.join(pool)}")
        return paired_test(
            self.values[(a, metric)],
            self.values[(b, metric)],
            a=a,
            b=b,
            metric=metric,
            alpha=self.alpha,
            n_permutations=n_permutations,
            n_bootstrap=self.n_bootstrap,
            seed=self.seed,
        )

    def empty_line(self, *, option: str = "empty") -> str:
        """How many queries have no relevant document and what the convention did with them.

        ``option`` names the convention the way the caller spells it: ``"empty"``
        (the API, ``empty="zero"``) or ``"--empty"`` (the CLI, ``--empty zero``).

        Examples
        --------
        ``"51 of 156 queries have no relevant document: skipped (--empty zero counts them
        as 0, --empty one as 1)"``
        """

        def conv(value: str) -> str:
            return f"{option} {value}" if option.startswith("-") else f'{option}="{value}"'

        n = len(self.qid)
        counts = {
            m: int(c)
            for m, c in self.table.select("metric", "n_empty")
            .unique(maintain_order=True)
            .iter_rows()
        }
        distinct = sorted(set(counts.values()))
        if distinct == [0]:
            return f"all {n} queries have a relevant document"
        if len(distinct) == 1:
            head = f"{distinct[0]} of {n} queries have no relevant document"
        else:
            head = (
                "queries without a relevant document: "
                + ", ".join(f"{c} for {m}" for m, c in counts.items())
                + f" (of {n})"
            )
        if self.empty == "skip":
            return f"{head}: skipped ({conv('zero')} counts them as 0, {conv('one')} as 1)"
        value = 0 if self.empty == "zero" else 1
        return f"{head}: counted as {value} ({conv('skip')} leaves them out)"

    def summary(self, *, option: str = "empty") -> str:
        """The table of means with CIs, then :meth:`empty_line` (``option`` as there)."""
        pct = f"{100 * (1 - self.alpha):.0f}%"
        w = max(8, *(len(r) for r in self.rankers))
        lines = [
            f"Evaluation on {self.data_name} ({len(self.qid)} queries); {pct} CIs from "
            f"{self.n_bootstrap} query-level bootstrap resamples (percentile)",
            f"  {'ranker':<{w}}  {'metric':<10}{'mean':>9}{'SE':>9}   {pct + ' CI':<20}"
            f"{'used':>6}{'empty':>7}",
        ]
        for row in self.table.iter_rows(named=True):
            lines.append(
                f"  {row['ranker']:<{w}}  {row['metric']:<10}{row['mean']:>9.4f}{row['se']:>9.4f}"
                f"   [{row['ci_low']:.4f}, {row['ci_high']:.4f}]  {row['n_used']:>6}"
                f"{row['n_empty']:>7}"
            )
        lines.append(f"  {self.empty_line(option=option)}")
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready: the table, per-query values (``"ranker|metric"`` -> list, null = skipped)."""
        return {
            "data": self.data_name,
            "alpha": self.alpha,
            "n_bootstrap": self.n_bootstrap,
            "seed": self.seed,
            "empty": self.empty,
            "table": self.table.to_dicts(),
            "per_query": {
                f"{r}|{m}": _nan_list(self.values[(r, m)].astype(np.float64))
                for r in self.rankers
                for m in self.metrics
            },
            "qid": np.asarray(self.qid).tolist(),
            "rankers": list(self.rankers),
            "metrics": list(self.metrics),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: dict) -> EvaluationResult:
        per_query = d["per_query"]
        if "rankers" in d:
            rankers, metrics = tuple(d["rankers"]), tuple(d["metrics"])
        else:  # files of clickrank <= 0.x: the order of the table
            rankers = tuple(dict.fromkeys(r["ranker"] for r in d["table"]))
            metrics = tuple(dict.fromkeys(r["metric"] for r in d["table"]))
        values = {
            (r, m): np.array(
                [np.nan if x is None else x for x in per_query[f"{r}|{m}"]], dtype=np.float64
            )
            for r in rankers
            for m in metrics
        }
        return cls(
            rankers=rankers,
            metrics=metrics,
            values=values,
            qid=np.asarray(d["qid"]),
            table=pl.DataFrame(d["table"]),
            alpha=d["alpha"],
            n_bootstrap=d["n_bootstrap"],
            seed=d["seed"],
            empty=d["empty"],
            data_name=d.get("data", ""),
            notes=tuple(d.get("notes", ())),
        )

    def save(self, path, *, overwrite: bool = True) -> Path:
        """Write table and per-query values as JSON (atomic; NaN as null)."""
        return super().save(path, overwrite=overwrite)


def _check_some_query_counts(values: dict, data: RankingData, empty: str) -> None:
    """Refuse, in one sentence, an evaluation where no query has a value (all skipped)."""
    if data.n_queries and all(np.isnan(v).all() for v in values.values()):
        raise EstimationError(
            f"no query of {data.name or 'the data'} has a relevant document (a label above 0), "
            f"so with empty={empty!r} every query is skipped and no "
            "metric is defined; evaluate on labelled data, or score such queries with "
            "empty='zero' or 'one' (--empty on the command line)"
        )


def _summary_table(
    values: dict,
    keys: list,
    n_empty: dict,
    n_queries: int,
    alpha: float,
    n_bootstrap: int,
    seed: int,
    empty: str,
) -> pl.DataFrame:
    """One row per (ranker, metric): mean, SE, bootstrap percentile CI, query counts."""
    cols = np.column_stack([values[k] for k in keys])
    boot = bootstrap_means(cols, n_bootstrap=n_bootstrap, seed=seed)
    used = (~np.isnan(cols)).sum(axis=0)
    # a metric with no (or one) query used is NaN in the table, which says so in words
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanquantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)
        means = np.nanmean(cols, axis=0)
        se = np.nanstd(cols, axis=0, ddof=1) / np.sqrt(used)
    return pl.DataFrame(
        {
            "ranker": [k[0] for k in keys],
            "metric": [k[1] for k in keys],
            "mean": means,
            "se": se,
            "ci_low": lo,
            "ci_high": hi,
            "n_queries": [n_queries] * len(keys),
            "n_used": used.astype(np.int64),
            "n_empty": [n_empty[k[1]] for k in keys],
            "empty": [empty] * len(keys),
        }
    )


def evaluate(
    rankers: Any,
    data: RankingData,
    metrics: Sequence[str] = ("ndcg@10", "err@10"),
    *,
    empty: str = "skip",
    n_bootstrap: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> EvaluationResult:
    """Evaluate rankers on labelled queries with query-level bootstrap CIs.

    Parameters
    ----------
    rankers : ranker, score array, list of them, or dict name -> ranker/scores
        A ranker is anything with ``predict(X)``; scores are ``[n_docs]`` arrays.
    data : RankingData with labels
    metrics : names for :func:`clickrank.metrics.get_metric` (e.g. ``"ndcg@10"``)
    empty : {"skip", "zero", "one"}
        Value of queries without a relevant document (see :mod:`clickrank.metrics`).
    n_bootstrap : int
        Bootstrap replicates; all rankers and metrics share the same resamples.
    alpha : float
        The intervals have level ``1 - alpha``.
    seed : int

    Returns
    -------
    EvaluationResult
    """
    from .metrics import get_metric
    from .ranking import ranker_scores

    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if data.y is None:
        raise InputError("evaluation needs relevance labels; data.y is None")
    alpha = check_alpha(alpha)
    if isinstance(metrics, str):
        metrics = (metrics,)
    named = _named(rankers)
    fns = {m: get_metric(m, empty=empty) for m in metrics}
    values, n_empty = {}, {}
    for r, ranker in named.items():
        s = ranker_scores(ranker, data, name=r)
        for m, f in fns.items():
            res = f(s, data.y, data.qptr)
            values[(r, m)] = np.asarray(res.values, dtype=np.float64)
            n_empty[m] = res.n_empty
    _check_some_query_counts(values, data, empty)
    keys = [(r, m) for r in named for m in metrics]
    table = _summary_table(values, keys, n_empty, data.n_queries, alpha, n_bootstrap, seed, empty)
    return EvaluationResult(
        tuple(named),
        tuple(metrics),
        values,
        np.asarray(data.qid),
        table,
        alpha,
        int(n_bootstrap),
        seed,
        empty,
        data.name,
    )


def compare(
    a: Any,
    b: Any,
    data: RankingData,
    metric: str = "ndcg@10",
    *,
    names: tuple[str, str] = ("A", "B"),
    empty: str = "skip",
    n_permutations: int = 10_000,
    n_bootstrap: int = 1000,
    alpha: float = 0.05,
    seed: int = 0,
) -> ComparisonResult:
    """Paired comparison of rankers ``a`` and ``b`` on ``metric`` over the queries of ``data``.

    Reports the mean difference (A − B) with a paired-t and a bootstrap
    interval, the paired t-test, the sign-flip randomization test (Fisher;
    Smucker et al. (2007)) and Cohen's :math:`d_z`.
    """
    res = evaluate(
        {names[0]: a, names[1]: b},
        data,
        [metric],
        empty=empty,
        n_bootstrap=n_bootstrap,
        alpha=alpha,
        seed=seed,
    )
    return res.compare(names[0], names[1], metric, n_permutations=n_permutations)


# --------------------------------------------------------------------------- counterfactual


def _utility_fn(utility: str | Callable, k: int | None) -> Callable[[np.ndarray], np.ndarray]:
    if callable(utility):
        return utility
    if utility == "dcg":

        def lam(r):
            v = 1.0 / np.log2(1.0 + r)
            return v if k is None else np.where(r <= k, v, 0.0)

        return lam
    if utility == "rank":
        return lambda r: r.astype(np.float64)
    raise InputError(f"utility must be 'dcg', 'rank' or a callable, got {utility!r}")


@dataclass(frozen=True, eq=False)
class CounterfactualResult(Result):
    """IPS estimate of a new ranker's click-based utility with a session-level SE."""

    FORMAT: ClassVar[str] = "clickrank.counterfactual"

    utility: str
    estimate: float
    se: float
    n_sessions: int
    n_clicks: int
    alpha: float
    clip: float | None

    def _ci(self, alpha: float | None = None) -> tuple[float, float]:
        z = stats.norm.isf(check_alpha(self.alpha if alpha is None else alpha) / 2)
        return (self.estimate - z * self.se, self.estimate + z * self.se)

    def conf_int(self, alpha: float | None = None) -> pl.DataFrame:
        """Normal interval ``estimate ± z SE`` (CLT over sessions), one row.

        Columns ``utility``, ``estimate``, ``lower``, ``upper``, ``alpha``.
        """
        a = self.alpha if alpha is None else check_alpha(alpha)
        lo, hi = self._ci(a)
        return pl.DataFrame(
            {
                "utility": [self.utility],
                "estimate": [self.estimate],
                "lower": [lo],
                "upper": [hi],
                "alpha": [a],
            }
        )

    def to_dict(self) -> dict:
        """The fields, then the interval at ``alpha`` (``ci_low``, ``ci_high``; derived)."""
        lo, hi = self._ci()
        return {**asdict(self), "ci_low": lo, "ci_high": hi}

    @classmethod
    def from_dict(cls, d: dict) -> CounterfactualResult:
        return cls(**cls._fields_in(d))

    def summary(self) -> str:
        lo, hi = self._ci()
        return "\n".join(
            [
                f"Counterfactual (IPS) estimate of {self.utility} per session",
                f"  estimate  {self.estimate:.5f}  SE {self.se:.5f}  "
                f"{100 * (1 - self.alpha):.0f}% CI [{lo:.5f}, {hi:.5f}]",
                f"  sessions  {self.n_sessions}   clicks {self.n_clicks}   "
                f"clip {'none' if self.clip is None else self.clip}",
                "  unbiased only over documents the logging policy could show (θ > 0)",
            ]
        )


def _check_theta(propensities: Any, clip: float | None) -> np.ndarray:
    """``theta[p - 1]`` of a Propensities or an array: positive, finite, clipped below."""
    theta = np.asarray(getattr(propensities, "theta", propensities), dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0 or np.any(~np.isfinite(theta)) or np.any(theta <= 0):
        raise InputError("propensities must be positive and finite for every logged position")
    if clip is not None:
        theta = np.maximum(theta, check_probability(clip, name="clip"))
    return theta


def _clicked_with_new_ranks(
    lf: pl.LazyFrame, data: RankingData, ranker: Any, context: tuple[str, ...] = ()
) -> pl.DataFrame:
    """The clicked rows (session, query, doc, position, the ``context`` columns) with
    ``_rank``, the new ranker's rank."""
    from .ranking import ranker_scores

    schema = lf.collect_schema()
    s = ranker_scores(ranker, data, name="ranker")
    ref = pl.DataFrame(
        {
            "query": np.repeat(np.asarray(data.qid), data.lengths),
            "doc": np.asarray(data.doc),
            "_rank": _ranks(s, data.qptr),
        }
    ).with_columns(pl.col("query").cast(schema["query"]), pl.col("doc").cast(schema["doc"]))
    clicked = (
        lf.filter(pl.col("click"))
        .select("session", "query", "doc", "position", *context)
        .join(ref.lazy(), on=["query", "doc"], how="left")
        .collect()
    )
    if clicked["_rank"].null_count():
        bad = clicked.filter(pl.col("_rank").is_null()).row(0, named=True)
        raise InputError(
            f"clicked document {bad['doc']!r} of query {bad['query']!r} is not in "
            "data (qid/doc must identify the logged documents)"
        )
    return clicked


def counterfactual(
    log: pl.DataFrame | pl.LazyFrame,
    data: RankingData,
    ranker: Any,
    propensities: Any,
    *,
    utility: str | Callable = "dcg",
    k: int | None = None,
    clip: float | None = None,
    alpha: float = 0.05,
) -> CounterfactualResult:
    r"""IPS estimate of a new ranker's click-based utility from a logged click log.

    Counterfactual evaluation (Joachims et al. (2017), §4,
    Eq. 5–6): for a utility that is additive over relevant documents,
    :math:`\Delta(S) = \sum_{d\ \mathrm{relevant}} \lambda(\mathrm{rank}(d \mid S))`,
    the estimate from logged sessions :math:`i = 1..n` is

    .. math::
        \hat\Delta_{\mathrm{IPS}}(S) = \frac1n \sum_{i=1}^{n}
        \sum_{d:\ c_i(d) = 1} \frac{\lambda(\mathrm{rank}(d \mid S_{q_i}))}{\theta_{p_i(d)}},

    where :math:`p_i(d)` is the position at which the logging ranker showed
    :math:`d` and :math:`\theta` the propensities. Under PBM it is unbiased for
    :math:`E_q[\sum_d \alpha(d)\, \lambda(\mathrm{rank}(d \mid S_q))]` restricted to
    the documents the logging policy shows with :math:`\theta > 0`
    (:math:`\alpha` = click probability once examined). The SE is the standard
    deviation of the per-session terms (zero for sessions without clicks) over
    :math:`\sqrt n`.

    Parameters
    ----------
    log : click log (DESIGN §2): session, query, position, doc, click
    data : RankingData whose ``qid``/``doc`` identify the logged (query, doc)
    ranker : the new ranker (``predict``) or scores ``[n_docs]``
    propensities : :class:`clickrank.propensity.Propensities` (``.theta``) or an
        array, ``theta[p - 1]`` for position p; an estimate per context (``contexts``)
        weighs each click by its session's context's curve (the log holds the columns)
    utility : "dcg" (:math:`\lambda(r) = 1/\log_2(1 + r)`, optionally cut at ``k``),
        "rank" (:math:`\lambda(r) = r`, the sum of ranks of relevant documents,
        Joachims et al. (2017), Eq. 6), or a callable on 1-based rank arrays
    clip : float, optional
        Use :math:`\max(\theta_p, \mathrm{clip})` (biased, lower variance).
    """
    from .targets import context_theta

    theta = _check_theta(propensities, clip)
    contexts = context_theta(propensities)
    if contexts is not None and clip is not None:
        contexts = contexts.clipped(check_probability(clip, name="clip"))
    cols = () if contexts is None else contexts.columns
    lam = _utility_fn(utility, k)
    lf = log.lazy() if isinstance(log, pl.DataFrame) else log
    need = {"session", "query", "position", "doc", "click", *cols}
    missing = need - set(lf.collect_schema().names())
    if missing:
        raise LogSchemaError(f"click log lacks column(s) {sorted(missing)}")
    n = int(lf.select(pl.col("session").n_unique().alias("n")).collect()["n"][0])
    if n == 0:
        raise InputError("the click log has no sessions")
    clicked = _clicked_with_new_ranks(lf, data, ranker, cols)
    pos = clicked["position"].to_numpy().astype(np.int64)
    if pos.size and (pos.min() < 1 or pos.max() > theta.size):
        raise InputError(
            f"logged positions run to {pos.max()} but only {theta.size} propensities were given"
        )
    th = theta[pos - 1] if contexts is None else contexts.table[contexts.index(clicked), pos - 1]
    contrib = lam(clicked["_rank"].to_numpy().astype(np.int64)) / th
    per_session = (
        pl.DataFrame({"session": clicked["session"], "v": contrib})
        .group_by("session")
        .agg(pl.col("v").sum())["v"]
        .to_numpy()
    )
    total, sq = per_session.sum(), (per_session**2).sum()
    mean = total / n
    var = (sq - n * mean**2) / max(n - 1, 1)
    name = utility if isinstance(utility, str) else getattr(utility, "__name__", "utility")
    if name == "dcg" and k is not None:
        name = f"dcg@{k}"
    return CounterfactualResult(
        name, float(mean), float(math.sqrt(max(var, 0.0) / n)), n, int(pos.size), alpha, clip
    )


# --------------------------------------------------------------------------- files


def load_scores(path: str | os.PathLike, data: RankingData) -> np.ndarray:
    """Read a scores file: one number per line, one line per row of ``data`` (file order).

    This is the output format of LightGBM/RankLib ``predict``; blank lines
    are an error, and the count must equal ``data.n_docs``.

    Raises
    ------
    DataFormatError
        Naming the file and the first bad line.
    """
    from ._core._io import read_text
    from ._core._validation import DataFormatError

    lines = read_text(path, what="scores").splitlines()
    try:  # fast path: every line is one number
        out = np.array(lines, dtype=np.float64) if lines else np.empty(0)
        bad = np.flatnonzero(~np.isfinite(out))
    except ValueError:
        out, bad = None, None
    if out is None or bad.size:
        for i, line in enumerate(lines):  # slow path only to name the first bad line
            try:
                ok = math.isfinite(float(line))
            except ValueError:
                ok = False
            if not ok:
                raise DataFormatError(
                    f"expected one finite number per line, got {line!r}", path=path, line=i + 1
                )
    if len(out) != data.n_docs:
        raise DataFormatError(
            f"has {len(out)} scores but the data has {data.n_docs} rows", path=path
        )
    return out
