"""Simulated interleaving experiments: per-impression outcomes and :class:`InterleavingResult`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import polars as pl

from .. import interleaving as il
from .._core._random import session_uniforms
from .._core._result import Result
from .._core._validation import check_alpha, check_choice, check_positive
from ..datasets import RankingData
from ..online.traffic import (
    N_UNIFORMS,
    STREAM_INTERLEAVE,
    TrafficSetup,
    impression_queries,
    setup_traffic,
    sign_test,
    traffic_chunks,
    z_quantile,
)


def interleaving_outcomes(
    st: TrafficSetup,
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
    for sess in traffic_chunks(n, chunk_size):
        q = impression_queries(seed, sess, st.n_queries)
        u = session_uniforms(seed, sess, N_UNIFORMS[method](st.k), STREAM_INTERLEAVE)
        res = il.METHODS[method](st.ra, st.rb, k=st.k, query=q, u=u, **extra)
        out[sess] = res.outcome(st.clicks(res.lists, q, sess, seed))
        if progress is not None:
            progress(len(sess))
    return out


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
        """Δ = (wins + ties/2)/n − 1/2; > 0 favours A (Chapelle et al. (2012))."""
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
        z = z_quantile(self.alpha if alpha is None else alpha)
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
        return float(sign_test(self.wins, self.losses))

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
        return cls(**cls._fields_in(d))

    def to_frame(self) -> pl.DataFrame:
        return pl.DataFrame([self.to_dict()])

    def summary(self, names: tuple[str, str] | None = None) -> str:
        """The counts, Δ with its interval, the sign test and the preferred ranker.

        ``names`` (A's, B's) names the rankers, e.g. the CLI's model folders.
        """
        lo, hi = self._ci()
        if names is None:
            preferred = self.winner
        else:
            preferred = {"A": f"A ({names[0]})", "B": f"B ({names[1]})"}.get(
                self.winner, "none (no significant difference)"
            )
        return "\n".join(
            [
                f"Interleaving experiment ({self.method}, clicks: {self.click_model})",
                *([f"  A = {names[0]}, B = {names[1]}"] if names is not None else []),
                f"  impressions   {self.n}",
                f"  A wins        {self.wins}  ({self.wins / self.n:.4f})",
                f"  B wins        {self.losses}  ({self.losses / self.n:.4f})",
                f"  ties          {self.ties}  ({self.ties / self.n:.4f}, incl. no click)",
                f"  Δ = (wins + ties/2)/n − 1/2 = {self.delta:+.5f}  "
                f"[{lo:+.5f}, {hi:+.5f}] ({100 * (1 - self.alpha):.0f}% normal CI)",
                f"  sign test (exact binomial, two-sided, non-ties): p = {self.p_value:.3g}",
                f"  preferred: {preferred}",
            ]
        )


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
    st = setup_traffic(data, a, b, click_model, k)
    o = interleaving_outcomes(st, method, n, seed, int(chunk_size), progress)
    wins, losses = int((o > 0).sum()), int((o < 0).sum())
    return InterleavingResult(
        method, n, wins, losses, n - wins - losses, alpha, type(st.model).__name__
    )
