"""Simulated online experiments: interleaving, A/B tests, power curves and fidelity.

Impressions are simulated on a labelled test set: each impression samples a
query uniformly, shows a top-``k`` list (interleaved, or one ranker's list in
an A/B test) and draws clicks from a click model given the *true* labels of
the shown documents. Every random draw is counter-based
(:mod:`clickrank._random`): impression ``i`` uses streams keyed by
``(seed, i)`` only, so results do not depend on ``chunk_size``.

Statistics
----------
Interleaving (Chapelle, Joachims, Radlinski & Yue, TOIS 2012, §4): per
impression the outcome is a win for A, a loss, or a tie;

.. math::
    \\Delta = \\frac{\\text{wins} + \\text{ties}/2}{n} - \\frac12 ,

with a normal confidence interval from the per-impression score
(1, 1/2, 0) and a **two-sided exact binomial sign test on the non-tied
impressions** (H0: P(A wins | not tie) = 1/2). A/B: each impression goes to
A or B with probability 1/2; clicks per impression use Welch's t-test, CTR@1
and abandonment (no click) a pooled two-proportion z-test.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from . import interleaving as il
from ._random import STREAM_CLICK, STREAM_QUERY, session_integers, session_uniforms
from ._result import Result
from ._segments import to_padded
from ._validation import InputError, check_alpha, check_choice, check_positive
from .clickmodels import UserMixture
from .datasets import RankingData
from .simulation import STREAM_USER, sample_clicks  # noqa: F401  (STREAM_USER: public name)

__all__ = [
    "InterleavingResult",
    "ABResult",
    "PowerCurve",
    "FidelityResult",
    "interleaving_experiment",
    "ab_experiment",
    "power_analysis",
    "fidelity_study",
    "expected_clicks",
    "AB_METRICS",
]

STREAM_INTERLEAVE = 220
STREAM_ARM = 221
STREAM_CLICK_B = 222  # second, independent click draw for the A/B pool (arm B)
AB_METRICS = ("clicks", "ctr@1", "abandonment")
#: +1 if a better ranker should raise the metric, -1 if it should lower it.
_AB_DIRECTION = {"clicks": 1, "ctr@1": 1, "abandonment": -1}


# --------------------------------------------------------------------------- inputs


def _scores(ranker: Any, data: RankingData, name: str) -> np.ndarray:
    """Scores of a ranker (``predict(X)``) or a ready score array (:func:`policy_scores`)."""
    from .policies import policy_scores

    return policy_scores(ranker, data, name=name)


def _click_model(model: Any):
    if model is None or isinstance(model, str):
        from .clickmodels import make_click_model

        return make_click_model("pbm" if model is None else model)
    if not (hasattr(model, "sample") and hasattr(model, "n_uniforms")):
        raise InputError(
            "click_model must be a click model (with sample() and n_uniforms) "
            f"or a name, got {model!r}"
        )
    return model


@dataclass(frozen=True, eq=False)
class _Setup:
    ra: np.ndarray
    rb: np.ndarray
    labels: np.ndarray  # [Q, W] true labels by within-query index, NaN padded
    model: Any
    k: int
    sessions_per_user: int = 1

    @property
    def n_queries(self) -> int:
        return self.ra.shape[0]

    def shown_labels(self, lists: np.ndarray, query: np.ndarray) -> np.ndarray:
        lab = self.labels[query[:, None], np.maximum(lists, 0)]
        lab[lists < 0] = np.nan
        return lab

    def clicks(self, lists, query, sessions, seed, stream=STREAM_CLICK):
        """Clicks on the shown lists: simulation's sampler (users keep their type)."""
        users = sessions // self.sessions_per_user if self.sessions_per_user > 1 else None
        return sample_clicks(
            self.model, self.shown_labels(lists, query), sessions, seed, stream=stream, users=users
        )


def _setup(data: RankingData, a, b, click_model, k, sessions_per_user: int = 1) -> _Setup:
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if data.y is None:
        raise InputError("online simulation needs true labels; data.y is None")
    k = check_positive(k, name="k", integer=True)
    sa, sb = _scores(a, data, "a"), _scores(b, data, "b")
    labels, _ = to_padded(data.y, data.qptr, fill=np.nan)
    return _Setup(
        il.rankings_from_scores(sa, data.qptr),
        il.rankings_from_scores(sb, data.qptr),
        labels.astype(np.float64),
        _click_model(click_model),
        k,
        sessions_per_user,
    )


def _top_lists(r: np.ndarray, k: int) -> np.ndarray:
    """First ``k`` columns of a ranking matrix, padded with -1 to width ``k``."""
    if r.shape[1] >= k:
        return r[:, :k]
    return np.pad(r, ((0, 0), (0, k - r.shape[1])), constant_values=-1)


def expected_clicks(
    data: RankingData, ranker: Any, *, click_model: Any = None, k: int = 10
) -> float:
    r"""Exact expected clicks per impression of a ranker's own top-``k`` lists.

    :math:`\frac{1}{Q}\sum_q \sum_{j \le k} P(C_j = 1 \mid \text{top-}k(q))`
    with the click model's exact marginals and queries weighted uniformly, as
    in the simulated traffic: the quantity the A/B metric "clicks per
    impression" estimates, and the offline utility a click-based comparison
    of two rankers can be checked against (:func:`fidelity_study`).
    """
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if data.y is None:
        raise InputError("expected_clicks needs true labels; data.y is None")
    k = check_positive(k, name="k", integer=True)
    labels, _ = to_padded(data.y, data.qptr, fill=np.nan)
    lists = _top_lists(il.rankings_from_scores(_scores(ranker, data, "ranker"), data.qptr), k)
    shown = labels.astype(np.float64)[np.arange(len(lists))[:, None], np.maximum(lists, 0)]
    shown[lists < 0] = np.nan
    return float(_click_model(click_model).click_probabilities(shown).sum(axis=1).mean())


def _chunks(n: int, chunk_size: int):
    for start in range(0, n, chunk_size):
        yield np.arange(start, min(n, start + chunk_size), dtype=np.int64)


def _impression_queries(seed: int, sessions: np.ndarray, n_queries: int) -> np.ndarray:
    return session_integers(seed, sessions, n_queries, STREAM_QUERY)[:, 0]


_N_UNIFORMS: dict[str, Callable[[int], int]] = {
    "balanced": lambda k: 1,
    "team-draft": lambda k: k,
    "probabilistic": lambda k: 2 * k,
    "optimized": lambda k: 1,
}


def _interleaving_outcomes(
    st: _Setup,
    method: str,
    n: int,
    seed: int,
    chunk_size: int,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Per-impression outcomes (+1/0/-1), int8 ``[n]``, simulated in chunks."""
    check_choice(method, il.METHODS, name="method")
    out = np.empty(n, dtype=np.int8)
    extra: dict[str, Any] = {}
    if method == "optimized":
        extra["distribution"] = il.solve_optimized(st.ra, st.rb, k=st.k)
    for sess in _chunks(n, chunk_size):
        q = _impression_queries(seed, sess, st.n_queries)
        u = session_uniforms(seed, sess, _N_UNIFORMS[method](st.k), STREAM_INTERLEAVE)
        res = il.METHODS[method](st.ra, st.rb, k=st.k, query=q, u=u, **extra)
        out[sess] = res.outcome(st.clicks(res.lists, q, sess, seed))
        if progress is not None:
            progress(len(sess))
    return out


# --------------------------------------------------------------------------- results


def _sign_test(wins, losses) -> np.ndarray:
    """Two-sided exact binomial sign test on non-ties, vectorized (p = 1 if no non-ties)."""
    w = np.asarray(wins)
    m = w + np.asarray(losses)
    lo = np.minimum(w, m - w)
    p = 2.0 * stats.binom.cdf(lo, np.maximum(m, 1), 0.5)
    return np.where(m > 0, np.minimum(p, 1.0), 1.0)


def _z(alpha: float) -> float:
    return float(stats.norm.isf(check_alpha(alpha) / 2))


def _wilson(successes: np.ndarray, n: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion (Wilson 1927), vectorized; NaN where ``n = 0``."""
    z = _z(alpha)
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.asarray(successes, dtype=np.float64) / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@dataclass(frozen=True, eq=False)
class InterleavingResult(Result):
    """Outcome of a simulated interleaving experiment.

    Attributes
    ----------
    method : str
    n : int            impressions
    wins, losses, ties : int   A wins, B wins, ties (ties include impressions without clicks)
    alpha : float      level of the interval
    click_model : str
    """

    method: str
    n: int
    wins: int
    losses: int
    ties: int
    alpha: float = 0.05
    click_model: str = ""

    @property
    def delta(self) -> float:
        """Δ = (wins + ties/2)/n − 1/2; > 0 favours A (Chapelle et al. 2012)."""
        return (self.wins + 0.5 * self.ties) / self.n - 0.5

    @property
    def se(self) -> float:
        """Standard error of Δ from the per-impression scores 1 / 0.5 / 0 (plug-in)."""
        n = self.n
        m2 = (self.wins + 0.25 * self.ties) / n
        var = m2 - (self.delta + 0.5) ** 2
        return math.sqrt(max(var, 0.0) / max(n - 1, 1))

    FORMAT = "clickrank.interleaving"

    def _ci(self, alpha: float | None = None) -> tuple[float, float]:
        z = _z(self.alpha if alpha is None else alpha)
        return (self.delta - z * self.se, self.delta + z * self.se)

    def conf_int(self, alpha: float | None = None) -> pl.DataFrame:
        """Normal (Wald) interval for Δ at level ``1 - alpha`` (default: the result's ``alpha``).

        One row: ``statistic`` ("delta"), ``estimate``, ``lower``, ``upper``, ``alpha``.
        """
        a = self.alpha if alpha is None else check_alpha(alpha)
        lo, hi = self._ci(a)
        return pl.DataFrame(
            {
                "statistic": ["delta"],
                "estimate": [self.delta],
                "lower": [lo],
                "upper": [hi],
                "alpha": [a],
            }
        )

    @property
    def p_value(self) -> float:
        """Two-sided exact binomial sign test on the non-tied impressions."""
        return float(_sign_test(self.wins, self.losses))

    @property
    def winner(self) -> str:
        """ "A", "B", or "none" (not significant at ``alpha``)."""
        if self.p_value >= self.alpha:
            return "none"
        return "A" if self.wins > self.losses else "B"

    def to_dict(self) -> dict:
        """The fields, then Δ, its SE and interval, the sign test and the winner (derived)."""
        d = asdict(self)
        lo, hi = self._ci()
        d.update(
            delta=self.delta,
            se=self.se,
            ci_low=lo,
            ci_high=hi,
            p_value=self.p_value,
            winner=self.winner,
        )
        return d

    @classmethod
    def from_dict(cls, d: dict) -> InterleavingResult:
        return cls(**_fields_of(cls, d))

    def to_frame(self) -> pl.DataFrame:
        return pl.DataFrame([self.to_dict()])

    def summary(self) -> str:
        lo, hi = self._ci()
        return "\n".join(
            [
                f"Interleaving experiment ({self.method}, clicks: {self.click_model})",
                f"  impressions   {self.n}",
                f"  A wins        {self.wins}  ({self.wins / self.n:.4f})",
                f"  B wins        {self.losses}  ({self.losses / self.n:.4f})",
                f"  ties          {self.ties}  ({self.ties / self.n:.4f}, incl. no click)",
                f"  Δ = (wins + ties/2)/n − 1/2 = {self.delta:+.5f}  "
                f"[{lo:+.5f}, {hi:+.5f}] ({100 * (1 - self.alpha):.0f}% normal CI)",
                f"  sign test (exact binomial, two-sided, non-ties): p = {self.p_value:.3g}",
                f"  preferred: {self.winner}",
            ]
        )

    def __str__(self) -> str:
        return self.summary()


def interleaving_experiment(
    data: RankingData,
    a: Any,
    b: Any,
    *,
    method: str = "team-draft",
    click_model: Any = None,
    n_impressions: int = 100_000,
    k: int = 10,
    alpha: float = 0.05,
    seed: int = 0,
    chunk_size: int = 250_000,
    progress: Callable[[int], None] | None = None,
) -> InterleavingResult:
    """Simulate ``n_impressions`` interleaved impressions of rankers ``a`` and ``b``.

    Parameters
    ----------
    data : RankingData
        Labelled test queries; queries are sampled uniformly per impression.
    a, b : ranker (``predict(X)``) or scores ``[n_docs]``
    method : {"balanced", "team-draft", "probabilistic", "optimized"}
    click_model : click model or name, default PBM (η = 1, graded attractiveness)
    n_impressions, k, alpha, seed, chunk_size
        Size, list length, test level, seed, impressions per vectorized chunk.
    progress : callable, optional
        Called with the number of impressions done after each chunk (CLI progress bar).
    """
    n = check_positive(n_impressions, name="n_impressions", integer=True)
    alpha = check_alpha(alpha)
    st = _setup(data, a, b, click_model, k)
    o = _interleaving_outcomes(st, method, n, seed, int(chunk_size), progress)
    wins, losses = int((o > 0).sum()), int((o < 0).sum())
    return InterleavingResult(
        method, n, wins, losses, n - wins - losses, alpha, type(st.model).__name__
    )


# --------------------------------------------------------------------------- A/B


def _ab_pool(st: _Setup, n: int, seed: int, chunk_size: int, progress=None):
    """Per-impression click metrics if the impression were shown A's list and B's list.

    The two arms use independent click draws (streams ``STREAM_CLICK`` and
    ``STREAM_CLICK_B``); returns dict metric -> (values_A [n], values_B [n]).
    """
    out = {m: (np.empty(n), np.empty(n)) for m in AB_METRICS}
    for sess in _chunks(n, chunk_size):
        q = _impression_queries(seed, sess, st.n_queries)
        for arm, (r, stream) in enumerate(((st.ra, STREAM_CLICK), (st.rb, STREAM_CLICK_B))):
            c = st.clicks(_top_lists(r, st.k)[q], q, sess, seed, stream)
            out["clicks"][arm][sess] = c.sum(axis=1)
            out["ctr@1"][arm][sess] = c[:, 0]
            out["abandonment"][arm][sess] = ~c.any(axis=1)
        if progress is not None:
            progress(len(sess))
    return out


def _ab_test(metric: str, mean_a, mean_b, var_a, var_b, n_a, n_b):
    """Two-sided p-values: Welch's t for clicks, pooled two-proportion z for binary metrics."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric == "clicks":
            se = np.sqrt(var_a / n_a + var_b / n_b)
            t = (mean_a - mean_b) / se
            df = (var_a / n_a + var_b / n_b) ** 2 / (
                (var_a / n_a) ** 2 / np.maximum(n_a - 1, 1)
                + (var_b / n_b) ** 2 / np.maximum(n_b - 1, 1)
            )
            p = 2 * stats.t.sf(np.abs(t), df)
        else:
            pool = (mean_a * n_a + mean_b * n_b) / (n_a + n_b)
            se = np.sqrt(pool * (1 - pool) * (1 / n_a + 1 / n_b))
            p = 2 * stats.norm.sf(np.abs(mean_a - mean_b) / se)
    return np.where(np.isfinite(p), p, 1.0)


@dataclass(frozen=True, eq=False)
class ABResult(Result):
    """A/B test on absolute click metrics (per arm mean, difference, CI, p-value)."""

    n_a: int
    n_b: int
    table: dict = field(default_factory=dict)  # metric -> dict of statistics
    alpha: float = 0.05
    click_model: str = ""

    FORMAT = "clickrank.ab"

    def to_frame(self) -> pl.DataFrame:
        return pl.DataFrame([{"metric": m, **v} for m, v in self.table.items()])

    def conf_int(self, alpha: float | None = None) -> pl.DataFrame:
        """Normal interval for each metric's difference A − B at level ``1 - alpha``.

        The standard error is the one the stored interval was built from
        (``(ci_high - ci_low) / (2 z)``), so any ``alpha`` is exact. Columns:
        ``metric``, ``estimate`` (A − B), ``lower``, ``upper``, ``alpha``.
        """
        a = self.alpha if alpha is None else check_alpha(alpha)
        z0, z = _z(self.alpha), _z(a)
        rows = []
        for m, v in self.table.items():
            se = (v["ci_high"] - v["ci_low"]) / (2 * z0)
            rows.append(
                {
                    "metric": m,
                    "estimate": v["diff"],
                    "lower": v["diff"] - z * se,
                    "upper": v["diff"] + z * se,
                    "alpha": a,
                }
            )
        return pl.DataFrame(rows)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ABResult:
        return cls(**_fields_of(cls, d))

    def summary(self) -> str:
        lines = [
            f"A/B test (clicks: {self.click_model}); impressions A {self.n_a}, B {self.n_b}",
            f"  {'metric':<12}{'A':>10}{'B':>10}{'A−B':>11}   {100 * (1 - self.alpha):.0f}% CI"
            f"{'':<15}p     test",
        ]
        for m, v in self.table.items():
            lines.append(
                f"  {m:<12}{v['mean_a']:>10.5f}{v['mean_b']:>10.5f}{v['diff']:>+11.5f}"
                f"   [{v['ci_low']:+.5f}, {v['ci_high']:+.5f}]  {v['p_value']:.3g}  "
                f"{v['test']}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def ab_experiment(
    data: RankingData,
    a: Any,
    b: Any,
    *,
    click_model: Any = None,
    n_impressions: int = 100_000,
    k: int = 10,
    alpha: float = 0.05,
    seed: int = 0,
    chunk_size: int = 250_000,
) -> ABResult:
    """A/B test on the same simulated traffic: each impression goes to A or B at random.

    Queries and click uniforms are those of :func:`interleaving_experiment`
    with the same seed; the arm is a fair coin per impression (its own stream).
    Metrics: clicks per impression (Welch's t-test), CTR@1 and abandonment
    (pooled two-proportion z-test); normal intervals for the difference A − B.
    """
    n = check_positive(n_impressions, name="n_impressions", integer=True)
    alpha = check_alpha(alpha)
    st = _setup(data, a, b, click_model, k)
    pool = _ab_pool(st, n, seed, int(chunk_size))
    arm_a = session_uniforms(seed, np.arange(n), 1, STREAM_ARM)[:, 0] < 0.5
    n_a, n_b = int(arm_a.sum()), int((~arm_a).sum())
    z = stats.norm.isf(alpha / 2)
    table = {}
    for m in AB_METRICS:
        xa, xb = pool[m][0][arm_a], pool[m][1][~arm_a]
        ma, mb = xa.mean(), xb.mean()
        va, vb = xa.var(ddof=1), xb.var(ddof=1)
        se = math.sqrt(va / n_a + vb / n_b)
        p = float(_ab_test(m, ma, mb, va, vb, n_a, n_b))
        table[m] = {
            "mean_a": float(ma),
            "mean_b": float(mb),
            "diff": float(ma - mb),
            "ci_low": float(ma - mb - z * se),
            "ci_high": float(ma - mb + z * se),
            "p_value": p,
            "test": "Welch t" if m == "clicks" else "two-proportion z (pooled)",
        }
    return ABResult(n_a, n_b, table, alpha, type(st.model).__name__)


# --------------------------------------------------------------------------- power


def _default_grid(max_n: int) -> np.ndarray:
    return np.unique(np.round(np.logspace(1, np.log10(max_n), 25)).astype(np.int64))


@dataclass(frozen=True, eq=False)
class PowerCurve(Result):
    """Power (P[significant at ``alpha`` in the right direction]) vs number of impressions.

    Attributes
    ----------
    n : int array ``[G]``  impressions per experiment
    power : dict label -> float array ``[G]`` (interleaving methods and ``"A/B <metric>"``)
    n_experiments : int     simulated experiments per grid point
    alpha : float
    pool_size : int         impressions in the simulated pool the experiments resample
    ndcg_a, ndcg_b : float  offline NDCG@k of the two rankers (the truth to detect)
    click_model : str
    sessions_per_user : int  impressions per user (> 1: user-level randomization and tests)
    """

    n: np.ndarray
    power: dict
    n_experiments: int
    alpha: float
    pool_size: int
    ndcg_a: float
    ndcg_b: float
    click_model: str = ""
    sessions_per_user: int = 1
    k: int = 10

    def n_for_power(self, target: float = 0.8) -> dict:
        """Impressions needed to reach ``target`` power (log-linear interpolation; inf if never)."""
        out = {}
        logn = np.log(self.n)
        for lab, p in self.power.items():
            above = np.flatnonzero(p >= target)
            if above.size == 0:
                out[lab] = math.inf
                continue
            i = int(above[0])
            if i == 0:
                out[lab] = float(self.n[0])
                continue
            f = (target - p[i - 1]) / max(p[i] - p[i - 1], 1e-12)
            out[lab] = float(np.exp(logn[i - 1] + f * (logn[i] - logn[i - 1])))
        return out

    FORMAT = "clickrank.power"

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", np.asarray(self.n, dtype=np.int64))
        object.__setattr__(
            self, "power", {k: np.asarray(v, dtype=np.float64) for k, v in self.power.items()}
        )

    def to_frame(self) -> pl.DataFrame:
        return pl.DataFrame({"n": self.n, **{k: v for k, v in self.power.items()}})

    def conf_int(self, alpha: float | None = None) -> pl.DataFrame:
        """Wilson interval of each simulated power (a share of ``n_experiments`` experiments).

        Long frame: ``method``, ``n``, ``estimate`` (power), ``lower``, ``upper``, ``alpha``.
        """
        a = self.alpha if alpha is None else check_alpha(alpha)
        parts = []
        for lab, p in self.power.items():
            lo, hi = _wilson(
                np.round(p * self.n_experiments), np.full(p.size, self.n_experiments), a
            )
            parts.append(
                pl.DataFrame(
                    {
                        "method": [lab] * p.size,
                        "n": self.n,
                        "estimate": p,
                        "lower": lo,
                        "upper": hi,
                        "alpha": [a] * p.size,
                    }
                )
            )
        return pl.concat(parts)

    def to_dict(self) -> dict:
        """JSON-ready fields (lists), then ``n_for_80`` (derived)."""
        return {
            "n": self.n.tolist(),
            "power": {k: v.tolist() for k, v in self.power.items()},
            "n_experiments": self.n_experiments,
            "alpha": self.alpha,
            "pool_size": self.pool_size,
            "ndcg_a": self.ndcg_a,
            "ndcg_b": self.ndcg_b,
            "click_model": self.click_model,
            "sessions_per_user": self.sessions_per_user,
            "k": self.k,
            "n_for_80": self.n_for_power(0.8),
        }

    @classmethod
    def from_dict(cls, d: dict) -> PowerCurve:
        return cls(**_fields_of(cls, d))

    @property
    def metric(self) -> str:
        """The offline metric the power curve detects (NDCG at the list length)."""
        return f"NDCG@{self.k}"

    def summary(self, target: float = 0.8) -> str:
        need = self.n_for_power(target)
        lines = [
            f"Power curve: {self.metric} A {self.ndcg_a:.4f} vs B {self.ndcg_b:.4f} "
            f"(diff {self.ndcg_a - self.ndcg_b:+.4f}); clicks: {self.click_model}",
            f"  {self.n_experiments} experiments per size, resampled from a pool of "
            f"{self.pool_size} impressions; alpha {self.alpha}; detection = significant in "
            "the direction of the offline winner",
            *(
                [
                    f"  {self.sessions_per_user} sessions per user; users are the unit of "
                    "randomization and analysis (t-tests on per-user sums)"
                ]
                if self.sessions_per_user > 1
                else []
            ),
            f"  {'method':<24}{'n for ' + format(target, '.0%') + ' power':>20}",
        ]
        for lab, v in need.items():
            lines.append(f"  {lab:<24}{v:>20,.0f}")
        il_best = min((v for k, v in need.items() if not k.startswith("A/B")), default=math.inf)
        ab_best = min((v for k, v in need.items() if k.startswith("A/B")), default=math.inf)
        if math.isfinite(il_best) and math.isfinite(ab_best):
            lines.append(f"  best A/B / best interleaving = {ab_best / il_best:.1f}x impressions")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def plot(self, path: str | os.PathLike | None = None, *, ax=None):
        """Power vs impressions (log x) per method; returns the Figure, saves a PNG if ``path``.

        A pyplot-free figure (:mod:`clickrank._figure`); the PNG is written atomically.
        """
        from ._figure import finish, new_axes

        fig, ax, own = new_axes(ax, (6.4, 4.2))
        for lab, p in self.power.items():
            ax.plot(
                self.n, p, marker="o", ms=3, ls="--" if lab.startswith("A/B") else "-", label=lab
            )
        ax.axhline(0.8, color="grey", lw=0.8, ls=":")
        ax.set_xscale("log")
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("impressions per experiment (log scale)")
        ax.set_ylabel(f"power (P[detect better ranker], α = {self.alpha})")
        ax.set_title(
            f"{self.metric} {self.ndcg_a:.3f} vs {self.ndcg_b:.3f}; {self.click_model} clicks"
        )
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        return finish(fig, path, own=own, dpi=90)


def power_analysis(
    data: RankingData,
    a: Any,
    b: Any,
    *,
    methods: Sequence[str] = ("team-draft", "probabilistic", "optimized", "balanced"),
    ab_metrics: Sequence[str] = AB_METRICS,
    click_model: Any = None,
    n_grid: Sequence[int] | None = None,
    n_experiments: int = 2000,
    pool_size: int = 200_000,
    k: int = 10,
    alpha: float = 0.05,
    seed: int = 0,
    chunk_size: int = 250_000,
    sessions_per_user: int = 1,
) -> PowerCurve:
    """Power of interleaving methods and A/B metrics to detect the better ranker.

    One pool of ``pool_size`` impressions is simulated per method (and one
    paired A/B pool); an experiment with ``n`` impressions is a bootstrap draw
    from the pool's empirical distribution, taken in closed form: interleaving
    outcome counts are ``Multinomial(n, (p_win, p_loss, p_tie))``, A/B arms
    get ``Binomial(n, 1/2)`` impressions and their click counts are multinomial
    over 0..k. ``n_experiments`` draws per grid point, no loop over impressions.
    The better ranker is the one with the higher offline NDCG@k; an experiment
    detects it when its test (sign test; Welch t; two-proportion z) is
    significant at ``alpha`` *and* points to it.

    ``sessions_per_user = m > 1`` models users who each issue ``m``
    impressions (consecutive impression indices). With a
    :class:`~clickrank.clickmodels.UserMixture` a user keeps her type across
    her sessions (one type uniform per user), so her sessions are correlated;
    other click models make them independent given the queries. The unit of
    analysis becomes the user, as in user-randomized online experiments: an
    experiment of ``n`` impressions has ``n // m`` users, drawn from the pool's
    ``pool_size // m`` users; A/B randomizes users and compares per-user sums
    of the metric (Welch t); interleaving tests the per-user sums of the
    outcomes (wins − losses) with a one-sample t-test. For ``m = 1`` the tests
    are the per-impression ones above.
    """
    from .metrics import ndcg

    for m in methods:
        check_choice(m, il.METHODS, name="methods")
    for m in ab_metrics:
        check_choice(m, AB_METRICS, name="ab_metrics")
    R = check_positive(n_experiments, name="n_experiments", integer=True)
    pool_size = check_positive(pool_size, name="pool_size", integer=True)
    spu = check_positive(sessions_per_user, name="sessions_per_user", integer=True)
    if pool_size // spu < 2:
        raise InputError(f"pool_size {pool_size} holds fewer than 2 users of {spu} sessions")
    st = _setup(data, a, b, click_model, k, spu)
    sa, sb = _scores(a, data, "a"), _scores(b, data, "b")
    nd_a = float(ndcg(sa, data.y, data.qptr, k=st.k))
    nd_b = float(ndcg(sb, data.y, data.qptr, k=st.k))
    better = 1 if nd_a > nd_b else -1
    grid = _default_grid(pool_size) if n_grid is None else np.asarray(n_grid, dtype=np.int64)
    n_users = pool_size // spu
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(7,)))
    power: dict[str, np.ndarray] = {}

    def per_user(x: np.ndarray) -> np.ndarray:
        return x[: n_users * spu].reshape(n_users, spu).sum(axis=1)

    for m in methods:
        o = _interleaving_outcomes(st, m, pool_size, seed, chunk_size)
        pw = np.empty(len(grid))
        if spu == 1:
            p = np.array([(o > 0).mean(), (o < 0).mean(), (o == 0).mean()])
            for g, n in enumerate(grid):  # loop over grid points only
                cnt = rng.multinomial(int(n), p, size=R)
                sig = _sign_test(cnt[:, 0], cnt[:, 1]) < alpha
                pw[g] = np.mean(sig & (np.sign(cnt[:, 0] - cnt[:, 1]) == better))
        else:
            levels = np.arange(-spu, spu + 1, dtype=np.float64)
            d = per_user(o.astype(np.int64)) + spu
            p = np.bincount(d, minlength=levels.size) / n_users
            for g, n in enumerate(grid):
                nu = max(int(n) // spu, 2)
                cnt = rng.multinomial(nu, p, size=R)
                mean = cnt @ levels / nu
                var = np.maximum(cnt @ levels**2 - nu * mean**2, 0) / (nu - 1)
                with np.errstate(divide="ignore", invalid="ignore"):
                    pv = 2 * stats.t.sf(np.abs(mean) / np.sqrt(var / nu), nu - 1)
                pv = np.where(np.isfinite(pv), pv, 1.0)
                pw[g] = np.mean((pv < alpha) & (np.sign(mean) == better))
        power[m] = pw
    if ab_metrics:
        pool = _ab_pool(st, pool_size, seed, chunk_size)
        for m in ab_metrics:
            xa, xb = pool[m]
            top = st.k if m == "clicks" else 1
            levels = np.arange(top * spu + 1, dtype=np.float64)
            if spu == 1:
                pa = np.array([(xa == v).mean() for v in levels])
                pb = np.array([(xb == v).mean() for v in levels])
            else:
                pa = np.bincount(per_user(xa).astype(np.int64), minlength=levels.size) / n_users
                pb = np.bincount(per_user(xb).astype(np.int64), minlength=levels.size) / n_users
            test = m if spu == 1 else "clicks"  # user sums are not binary: Welch t
            pw = np.empty(len(grid))
            for g, n in enumerate(grid):
                nu = max(int(n) // spu, 2)
                na = rng.binomial(nu, 0.5, size=R)
                na = np.clip(na, 1, nu - 1)
                nb_ = nu - na
                ca = rng.multinomial(na, pa)
                cb = rng.multinomial(nb_, pb)
                ma, mb = ca @ levels / na, cb @ levels / nb_
                va = np.maximum(ca @ levels**2 - na * ma**2, 0) / np.maximum(na - 1, 1)
                vb = np.maximum(cb @ levels**2 - nb_ * mb**2, 0) / np.maximum(nb_ - 1, 1)
                pv = _ab_test(test, ma, mb, va, vb, na, nb_)
                right = np.sign(ma - mb) == better * _AB_DIRECTION[m]
                pw[g] = np.mean((pv < alpha) & right)
            power[f"A/B {m}"] = pw
    return PowerCurve(
        grid, power, R, alpha, pool_size, nd_a, nd_b, _model_name(st.model), spu, st.k
    )


def _model_name(model: Any) -> str:
    if isinstance(model, UserMixture):
        if len(model.names) > 4:
            return f"UserMixture({len(model.names)} user types)"
        return f"UserMixture({', '.join(model.names)})"
    return type(model).__name__


# --------------------------------------------------------------------------- fidelity


@dataclass(frozen=True, eq=False)
class FidelityResult(Result):
    """Agreement of interleaving winners with offline NDCG@k differences over ranker pairs.

    ``table`` has one row per pair: a, b (ranker ids), ndcg_a, ndcg_b, diff
    (NDCG@k A − B), clicks_a, clicks_b (exact expected clicks per impression
    of each ranker's own list under the click model, :func:`expected_clicks`),
    delta, p_value, agree (Δ has the sign of diff), agree_clicks (Δ has the
    sign of clicks_a − clicks_b).
    """

    table: pl.DataFrame
    method: str
    n_impressions: int
    min_difference: float
    alpha: float
    k: int = 10

    FORMAT = "clickrank.fidelity"

    def to_dict(self) -> dict:
        """The fields (``table`` as a list of rows), then the agreement shares (derived)."""
        frac_sig, agree_sig = self.significant_agreement
        return {
            "table": self.table.to_dicts(),
            "method": self.method,
            "n_impressions": self.n_impressions,
            "min_difference": self.min_difference,
            "alpha": self.alpha,
            "k": self.k,
            "agreement": self.agreement,
            "significant_share": frac_sig,
            "significant_agreement": agree_sig,
            "click_agreement": self.click_agreement[1],
        }

    @classmethod
    def from_dict(cls, d: dict) -> FidelityResult:
        f = _fields_of(cls, d)
        rows = f.pop("table")
        table = (
            pl.DataFrame(rows, schema=_FIDELITY_SCHEMA)
            if rows
            else pl.DataFrame(schema=_FIDELITY_SCHEMA)
        )
        return cls(table=table, **f)

    def conf_int(self, alpha: float | None = None) -> pl.DataFrame:
        """Wilson intervals of the agreement shares over the eligible pairs.

        Rows ``statistic``: "agreement" (sign agreement with ΔNDCG), "significant"
        (share of pairs significant at the result's ``alpha``), "significant
        agreement" (share of those agreeing); columns ``estimate``, ``lower``,
        ``upper``, ``n`` (pairs the share is over), ``alpha``.
        """
        a = self.alpha if alpha is None else check_alpha(alpha)
        e = self._eligible()
        sig = e.filter(pl.col("p_value") < self.alpha)
        counts = np.array([e["agree"].sum(), sig.height, sig["agree"].sum()], dtype=np.float64)
        n = np.array([e.height, e.height, sig.height], dtype=np.float64)
        lo, hi = _wilson(counts, n, a)
        with np.errstate(divide="ignore", invalid="ignore"):
            est = counts / n
        return pl.DataFrame(
            {
                "statistic": ["agreement", "significant", "significant agreement"],
                "estimate": est,
                "lower": lo,
                "upper": hi,
                "n": n.astype(np.int64),
                "alpha": [a] * 3,
            }
        )

    def _eligible(self) -> pl.DataFrame:
        return self.table.filter(pl.col("diff").abs() >= self.min_difference)

    @property
    def agreement(self) -> float:
        """Share of eligible pairs whose Δ has the sign of the NDCG difference (ties count 0)."""
        e = self._eligible()
        return float(e["agree"].mean()) if e.height else math.nan

    @property
    def significant_agreement(self) -> tuple[float, float]:
        """(share of eligible pairs significant at alpha, share of those that agree)."""
        e = self._eligible()
        s = e.filter(pl.col("p_value") < self.alpha)
        return (
            s.height / e.height if e.height else math.nan,
            float(s["agree"].mean()) if s.height else math.nan,
        )

    @property
    def click_agreement(self) -> tuple[float, float]:
        """Over eligible pairs significant at alpha: (share agreeing with NDCG, share
        agreeing with the expected-clicks difference under the click model)."""
        s = self._eligible().filter(pl.col("p_value") < self.alpha)
        if not s.height:
            return (math.nan, math.nan)
        return float(s["agree"].mean()), float(s["agree_clicks"].mean())

    def summary(self) -> str:
        e = self._eligible()
        frac_sig, agree_sig = self.significant_agreement
        _, agree_clicks = self.click_agreement
        return "\n".join(
            [
                f"Fidelity of {self.method} interleaving vs offline NDCG@{self.k} "
                f"({self.n_impressions} impressions per pair)",
                f"  pairs {self.table.height}; with |ΔNDCG| >= {self.min_difference}: {e.height}",
                f"  sign agreement                  {self.agreement:.3f}",
                f"  significant at {self.alpha}: {frac_sig:.3f} of pairs; of those agreeing: "
                f"{agree_sig:.3f}",
                f"  significant pairs agreeing with the expected-clicks difference under the "
                f"click model: {agree_clicks:.3f}",
            ]
        )

    def __str__(self) -> str:
        return self.summary()


def fidelity_study(
    data: RankingData,
    *,
    n_pairs: int = 100,
    method: str = "team-draft",
    click_model: Any = None,
    n_impressions: int = 20_000,
    noise: tuple[float, float] = (0.5, 3.0),
    min_difference: float = 0.01,
    k: int = 10,
    alpha: float = 0.05,
    seed: int = 0,
    rankers: Sequence[Any] | None = None,
) -> FidelityResult:
    """Does the interleaving winner agree with the offline NDCG@k winner?

    Without ``rankers``, rankers are the true labels plus Gaussian noise whose
    standard deviation is drawn uniformly from ``noise`` per ranker (so ranker
    quality varies), two fresh rankers per pair. With ``rankers`` (trained
    models with ``predict(X)`` or score arrays, e.g. LambdaMART models of
    different quality), the pairs are all unordered pairs ``i < j`` of them,
    or ``n_pairs`` of those drawn without replacement (seeded) if there are
    more. For each pair the offline NDCG@k difference and an interleaving
    experiment of ``n_impressions`` impressions are computed (independent
    seeds). Agreement is reported over pairs whose NDCG@k differs by at least
    ``min_difference``. ``table`` columns: a, b (ranker ids), ndcg_a, ndcg_b,
    diff, clicks_a, clicks_b, delta, p_value, agree, agree_clicks (see
    :class:`FidelityResult`).
    """
    from .metrics import ndcg

    n_pairs = check_positive(n_pairs, name="n_pairs", integer=True)
    if not isinstance(data, RankingData):
        raise InputError(f"data must be a RankingData, got {type(data).__name__}")
    if data.y is None:
        raise InputError("fidelity_study needs true labels; data.y is None")
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(8,)))
    model = _click_model(click_model)
    if rankers is None:
        sig = rng.uniform(noise[0], noise[1], size=(n_pairs, 2))
        scores = [
            data.y + sig[i // 2, i % 2] * rng.standard_normal(data.n_docs)
            for i in range(2 * n_pairs)
        ]
        pairs = np.arange(2 * n_pairs).reshape(n_pairs, 2)
    else:
        scores = [_scores(r, data, f"rankers[{i}]") for i, r in enumerate(rankers)]
        if len(scores) < 2:
            raise InputError("fidelity_study needs at least two rankers")
        ii, jj = np.triu_indices(len(scores), k=1)
        pairs = np.column_stack([ii, jj])
        if len(pairs) > n_pairs:
            pairs = pairs[np.sort(rng.choice(len(pairs), n_pairs, replace=False))]
    nd: dict[int, float] = {}
    ec: dict[int, float] = {}
    rows = []
    for p, (ia, ib) in enumerate(pairs):  # each pair is a vectorized experiment
        for i in (ia, ib):
            if i not in nd:
                nd[i] = float(ndcg(scores[i], data.y, data.qptr, k=k))
                ec[i] = expected_clicks(data, scores[i], click_model=model, k=k)
        r = interleaving_experiment(
            data,
            scores[ia],
            scores[ib],
            method=method,
            click_model=model,
            n_impressions=n_impressions,
            k=k,
            alpha=alpha,
            seed=seed * 100_003 + p + 1,
        )
        diff = nd[ia] - nd[ib]
        rows.append(
            {
                "a": int(ia),
                "b": int(ib),
                "ndcg_a": nd[ia],
                "ndcg_b": nd[ib],
                "diff": diff,
                "clicks_a": ec[ia],
                "clicks_b": ec[ib],
                "delta": r.delta,
                "p_value": r.p_value,
                "agree": float(np.sign(r.delta) == np.sign(diff) and r.delta != 0),
                "agree_clicks": float(
                    np.sign(r.delta) == np.sign(ec[ia] - ec[ib]) and r.delta != 0
                ),
            }
        )
    return FidelityResult(pl.DataFrame(rows), method, n_impressions, min_difference, alpha, k)


_FIDELITY_SCHEMA = {
    "a": pl.Int64,
    "b": pl.Int64,
    "ndcg_a": pl.Float64,
    "ndcg_b": pl.Float64,
    "diff": pl.Float64,
    "clicks_a": pl.Float64,
    "clicks_b": pl.Float64,
    "delta": pl.Float64,
    "p_value": pl.Float64,
    "agree": pl.Float64,
    "agree_clicks": pl.Float64,
}


def _fields_of(cls: type, d: dict) -> dict:
    """The constructor arguments of dataclass ``cls`` found in ``d`` (derived keys dropped)."""
    return {f.name: d[f.name] for f in fields(cls) if f.name in d}
