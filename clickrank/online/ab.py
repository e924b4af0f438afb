"""Simulated A/B tests on absolute click metrics: :class:`ABResult`."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from .._core._random import STREAM_CLICK, session_uniforms
from .._core._result import Result
from .._core._validation import check_alpha, check_positive
from ..datasets import RankingData
from .traffic import (
    STREAM_ARM,
    STREAM_CLICK_B,
    TrafficSetup,
    _top_lists,
    impression_queries,
    setup_traffic,
    traffic_chunks,
    z_quantile,
)

AB_METRICS = ("clicks", "ctr@1", "abandonment")
#: +1 if a better ranker should raise the metric, -1 if it should lower it.
_AB_DIRECTION = {"clicks": 1, "ctr@1": 1, "abandonment": -1}
# --------------------------------------------------------------------------- A/B


def _ab_pool(st: TrafficSetup, n: int, seed: int, chunk_size: int, progress=None):
    """Per-impression click metrics if the impression were shown A's list and B's list.

    The two arms use independent click draws (streams ``STREAM_CLICK`` and
    ``STREAM_CLICK_B``); returns dict metric -> (values_A [n], values_B [n]).
    """
    out = {m: (np.empty(n), np.empty(n)) for m in AB_METRICS}
    for sess in traffic_chunks(n, chunk_size):
        q = impression_queries(seed, sess, st.n_queries)
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
        z0, z = z_quantile(self.alpha), z_quantile(a)
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
        return cls(**cls._fields_in(d))

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
    st = setup_traffic(data, a, b, click_model, k)
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
