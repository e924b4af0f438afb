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
from .._result import Result
from .._validation import InputError, check_alpha, check_choice, check_positive
from ..datasets import RankingData
from ._traffic import _fields_of, _model_name, _scores, _setup, _sign_test, _wilson
from .ab import _AB_DIRECTION, AB_METRICS, _ab_pool, _ab_test
from .interleave import _interleaving_outcomes

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
        from .._figure import finish, new_axes

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
