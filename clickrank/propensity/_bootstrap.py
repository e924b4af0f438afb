r"""Session-level bootstrap for any propensity estimator.

Sessions are the independent unit of a click log, so the bootstrap resamples
sessions: replicate :math:`b` gives session :math:`s` the weight
:math:`w_{bs} \sim \mathrm{Poisson}(1)` (the Poisson bootstrap, a standard
large-sample equivalent of multinomial resampling; Hanley & MacGibbon 2006;
Chamandy et al. 2012), and the estimator's sufficient statistics are
recomputed as weighted sums in one lazy aggregation per replicate. No Python
loop runs over sessions. The interval is the log-scale normal interval with the bootstrap standard
deviation of :math:`\log\hat\theta^{(b)}` (default) or the percentile
interval of the replicates (:meth:`Propensities.conf_int`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from .._validation import EstimationError, InputError, check_choice, check_positive
from ._result import Propensities
from ._stats import WEIGHT, as_lazy

__all__ = ["bootstrap"]


def _resolve(estimator: Any):
    from . import ESTIMATORS

    if isinstance(estimator, str):
        if estimator not in ESTIMATORS:
            raise InputError(
                f"estimator must be one of {', '.join(map(repr, ESTIMATORS))}; got {estimator!r}"
            )
        return ESTIMATORS[estimator]
    for spec in ESTIMATORS.values():
        if spec.function is estimator:
            return spec
    raise InputError(
        "estimator must be a method name or one of the estimator functions of "
        f"clickrank.propensity, got {estimator!r}"
    )


def bootstrap(
    estimator: Any,
    log: Any,
    *,
    n: int = 200,
    seed: int = 0,
    ci_method: str = "normal",
    **kw: Any,
) -> Propensities:
    """Percentile intervals from a session-level (Poisson) bootstrap.

    Parameters
    ----------
    estimator : str or callable
        A method name of :func:`estimate_propensities` (``"swap"``,
        ``"randomized"``, ``"em"``, ...) or one of the estimator functions.
    log : polars DataFrame, LazyFrame or parquet path
        The click log.
    n : int
        Number of replicates.
    seed : int
        Seed of the weights; same seed, same result.
    ci_method : {"normal", "percentile"}
        ``normal`` (default): log-scale normal interval with the bootstrap SE,
        stable with a few dozen replicates; ``percentile``: quantiles of the
        replicates (needs ``n`` in the thousands for 99% intervals).
    **kw
        Passed to the estimator (e.g. ``K``, ``route``).

    Returns
    -------
    Propensities
        The full-data estimate, ``se`` = bootstrap SD of log θ, and the
        ``replicates`` [n, K] of log θ that :meth:`~Propensities.conf_int` uses.
    """
    spec = _resolve(estimator)
    ci_method = check_choice(ci_method, ("normal", "percentile"), name="ci_method")
    n = int(check_positive(n, name="n", integer=True))
    lf = as_lazy(log)
    full = spec.fit(spec.statistics(lf, weighted=False), **spec.fit_kwargs, **kw)
    sessions = lf.select(pl.col("session").unique()).collect().to_series().sort()
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    reps = np.full((n, full.K), np.nan)
    failed = 0
    for b in range(n):  # one lazy aggregation per replicate
        w = rng.poisson(1.0, sessions.len()).astype(np.float64)
        wf = pl.DataFrame({"session": sessions, WEIGHT: w}).filter(pl.col(WEIGHT) > 0)
        weighted = lf.join(wf.lazy(), on="session", how="inner")
        try:
            est = spec.fit(spec.statistics(weighted, weighted=True), **spec.fit_kwargs, **kw)
        except EstimationError:
            failed += 1
            continue
        k = min(est.K, full.K)
        with np.errstate(divide="ignore"):
            reps[b, :k] = np.log(est.theta[:k])
    reps[:, ~full.identified] = np.nan
    with np.errstate(invalid="ignore"):
        finite = np.where(np.isfinite(reps), reps, np.nan)
        se = np.nanstd(finite, axis=0, ddof=1) if n > 1 else np.full(full.K, np.nan)
    warns = list(full.warnings)
    if failed:
        warns.append(f"bootstrap: {failed} of {n} replicates were not identified and were dropped")
    bad = np.isfinite(full.theta) & (np.isfinite(reps).sum(axis=0) < 0.9 * (n - failed))
    for p in np.flatnonzero(bad) + 1:
        warns.append(f"bootstrap: position {p} was degenerate (0 or NaN) in more than 10% "
                     "of the replicates; its interval is unreliable")
    method = full.method if full.method == "em" else f"{full.method}+bootstrap"
    return Propensities(
        theta=full.theta, se=se, method=method, n_sessions=full.n_sessions, n=full.n,
        warnings=tuple(warns), absolute=full.absolute, replicates=reps, ci_method=ci_method,
        info={**full.info, "interval": f"session Poisson bootstrap, {n} replicates, {ci_method}",
              "bootstrap_seed": int(seed)},
    )
