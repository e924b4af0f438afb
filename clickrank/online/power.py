"""Power of interleaving and A/B tests vs the number of impressions: :class:`PowerCurve`."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from .. import interleaving as il
from .._core._result import Result
from .._core._validation import InputError, check_alpha, check_choice, check_positive
from ..datasets import RankingData
from ..interleaving.experiment import interleaving_outcomes
from .ab import _AB_DIRECTION, AB_METRICS, _ab_pool, _ab_test
from .traffic import _model_name, _scores, _wilson, setup_traffic, sign_test

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
            self,
            "power",
            {k: np.asarray(v, dtype=np.float64) for k, v in self.power.items()},
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
        return cls(**cls._fields_in(d))

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

    def plot(self, path: str | os.PathLike | None = None, *, ax=None):
        """Power vs impressions (log x) per method; returns the Figure, saves a PNG if ``path``.

        A pyplot-free figure (:mod:`clickrank._core._figures`); the PNG is written atomically.
        """
        from .._core._figures import finish, new_axes

        fig, ax, own = new_axes(ax, (6.4, 4.2))
        for lab, p in self.power.items():
            ax.plot(
                self.n,
                p,
                marker="o",
                ms=3,
                ls="--" if lab.startswith("A/B") else "-",
                label=lab,
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
    from ..metrics import ndcg

    for m in methods:
        check_choice(m, il.METHODS, name="methods")
    for m in ab_metrics:
        check_choice(m, AB_METRICS, name="ab_metrics")
    R = check_positive(n_experiments, name="n_experiments", integer=True)
    pool_size = check_positive(pool_size, name="pool_size", integer=True)
    spu = check_positive(sessions_per_user, name="sessions_per_user", integer=True)
    if pool_size // spu < 2:
        raise InputError(f"pool_size {pool_size} holds fewer than 2 users of {spu} sessions")
    st = setup_traffic(data, a, b, click_model, k, spu)
    sa, sb = _scores(a, data, "a"), _scores(b, data, "b")
    nd_a = float(ndcg(sa, data.y, data.qptr, k=st.k))
    nd_b = float(ndcg(sb, data.y, data.qptr, k=st.k))
    better = 1 if nd_a > nd_b else -1
    grid = _default_grid(pool_size) if n_grid is None else np.asarray(n_grid, dtype=np.int64)
    design = _Design(grid, R, alpha, spu, pool_size // spu, better)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(7,)))
    power: dict[str, np.ndarray] = {}
    for m in methods:  # one rng, drawn in this order: methods, then A/B metrics
        o = interleaving_outcomes(st, m, pool_size, seed, chunk_size)
        power[m] = _interleaving_power(o, design, rng)
    if ab_metrics:
        pool = _ab_pool(st, pool_size, seed, chunk_size)
        for m in ab_metrics:
            power[f"A/B {m}"] = _ab_power(*pool[m], m, st.k, design, rng)
    return PowerCurve(
        grid, power, R, alpha, pool_size, nd_a, nd_b, _model_name(st.model), spu, st.k
    )


@dataclass(frozen=True)
class _Design:
    """The simulated experiments: sizes, repetitions, level, users, the direction to detect."""

    grid: np.ndarray  # impressions per experiment
    n_experiments: int
    alpha: float
    spu: int  # sessions per user
    n_users: int  # users in the pool
    better: int  # +1 if A has the higher offline metric, else -1

    def per_user(self, x: np.ndarray) -> np.ndarray:
        """Per-user sums of a per-impression value (consecutive impressions form a user)."""
        return x[: self.n_users * self.spu].reshape(self.n_users, self.spu).sum(axis=1)


def _interleaving_power(o: np.ndarray, d: _Design, rng: np.random.Generator) -> np.ndarray:
    """Power per grid point of interleaving with pool outcomes ``o`` (+1/0/-1).

    Per impression (``spu = 1``): outcome counts of an experiment of ``n``
    impressions are ``Multinomial(n, (p_win, p_loss, p_tie))`` and the test is
    the exact sign test. Per user: the per-user sums of the outcomes are
    resampled and tested with a one-sample t-test.
    """
    pw = np.empty(len(d.grid))
    if d.spu == 1:
        p = np.array([(o > 0).mean(), (o < 0).mean(), (o == 0).mean()])
        for g, n in enumerate(d.grid):  # loop over grid points only
            cnt = rng.multinomial(int(n), p, size=d.n_experiments)
            sig = sign_test(cnt[:, 0], cnt[:, 1]) < d.alpha
            pw[g] = np.mean(sig & (np.sign(cnt[:, 0] - cnt[:, 1]) == d.better))
        return pw
    levels = np.arange(-d.spu, d.spu + 1, dtype=np.float64)
    p = np.bincount(d.per_user(o.astype(np.int64)) + d.spu, minlength=levels.size) / d.n_users
    for g, n in enumerate(d.grid):
        nu = max(int(n) // d.spu, 2)
        cnt = rng.multinomial(nu, p, size=d.n_experiments)
        mean = cnt @ levels / nu
        var = np.maximum(cnt @ levels**2 - nu * mean**2, 0) / (nu - 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            pv = 2 * stats.t.sf(np.abs(mean) / np.sqrt(var / nu), nu - 1)
        pv = np.where(np.isfinite(pv), pv, 1.0)
        pw[g] = np.mean((pv < d.alpha) & (np.sign(mean) == d.better))
    return pw


def _ab_power(
    xa: np.ndarray, xb: np.ndarray, metric: str, k: int, d: _Design, rng: np.random.Generator
) -> np.ndarray:
    """Power per grid point of an A/B test on ``metric`` with pool values ``xa``, ``xb``.

    Arms get ``Binomial(n, 1/2)`` impressions (users) and their metric values
    are multinomial over the observed levels; Welch t (clicks, per-user sums)
    or the pooled two-proportion z-test (binary per-impression metrics).
    """
    top = k if metric == "clicks" else 1
    levels = np.arange(top * d.spu + 1, dtype=np.float64)
    if d.spu == 1:
        pa = np.array([(xa == v).mean() for v in levels])
        pb = np.array([(xb == v).mean() for v in levels])
    else:
        pa = np.bincount(d.per_user(xa).astype(np.int64), minlength=levels.size) / d.n_users
        pb = np.bincount(d.per_user(xb).astype(np.int64), minlength=levels.size) / d.n_users
    test = metric if d.spu == 1 else "clicks"  # user sums are not binary: Welch t
    pw = np.empty(len(d.grid))
    for g, n in enumerate(d.grid):
        nu = max(int(n) // d.spu, 2)
        na = np.clip(rng.binomial(nu, 0.5, size=d.n_experiments), 1, nu - 1)
        nb_ = nu - na
        ca = rng.multinomial(na, pa)
        cb = rng.multinomial(nb_, pb)
        ma, mb = ca @ levels / na, cb @ levels / nb_
        va = np.maximum(ca @ levels**2 - na * ma**2, 0) / np.maximum(na - 1, 1)
        vb = np.maximum(cb @ levels**2 - nb_ * mb**2, 0) / np.maximum(nb_ - 1, 1)
        pv = _ab_test(test, ma, mb, va, vb, na, nb_)
        right = np.sign(ma - mb) == d.better * _AB_DIRECTION[metric]
        pw[g] = np.mean((pv < d.alpha) & right)
    return pw
