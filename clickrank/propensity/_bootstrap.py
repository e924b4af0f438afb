r"""Session-level bootstrap for any propensity estimator, in one pass over the log.

Sessions are the independent unit of a click log, so the bootstrap resamples
sessions. Each session falls into one of ``B`` buckets by a hash of (seed,
session) (:func:`~._stats.bucket_expr`); the estimator's sufficient
statistics are summed per bucket in the same single streaming pass that
computes them for the whole log. Replicate :math:`b` gives bucket :math:`m`
the weight :math:`w_{bm} \sim \mathrm{Poisson}(1)` (the Poisson bootstrap,
Hanley & MacGibbon (2006); Chamandy et al. (2012), who bootstrap data streams
this way) and refits on the weighted sums (:func:`~._stats.reweight`). The
buckets are independent random groups of sessions, so this is a cluster
bootstrap of sessions with ``B`` clusters: the standard error has about
``B`` degrees of freedom (``B = 128`` by default: its relative error is about
6%), the log is read once however many replicates are drawn, and memory is
``B`` times that of the statistics at most (never more than the rows of the log).
The interval is the log-scale normal interval with the bootstrap standard
deviation of :math:`\log\hat\theta^{(b)}` (default) or the percentile
interval of the replicates (:meth:`Propensities.conf_int`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._core._validation import (
    EstimationError,
    InputError,
    check_choice,
    check_non_negative,
    check_positive,
)
from ._registry import ESTIMATORS
from ._result import Propensities
from ._stats import as_lazy, reweight

__all__ = ["bootstrap", "bootstrap_statistics", "BUCKETS"]

#: Default number of session buckets of :func:`bootstrap`.
BUCKETS = 128


def _resolve(estimator: Any):
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
    buckets: int = BUCKETS,
    progress: Callable[[int], None] | None = None,
    **kw: Any,
) -> Propensities:
    """Intervals from a session-level (Poisson) bootstrap over session buckets.

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
        Seed of the buckets and of the weights; same seed, same result.
    ci_method : {"normal", "percentile"}
        ``normal`` (default): log-scale normal interval with the bootstrap SE,
        stable with a few dozen replicates; ``percentile``: quantiles of the
        replicates (needs ``n`` in the thousands for 99% intervals).
    buckets : int
        Number of session buckets ``B`` (see the module docstring); at least 2.
    progress : callable, optional
        Called with 1 after each replicate (e.g. a progress bar's ``update``).
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
    buckets = int(check_positive(buckets, name="buckets", integer=True))
    seed = int(check_non_negative(seed, name="seed", integer=True))
    if buckets < 2:
        raise InputError(f"buckets must be >= 2, got {buckets}")
    lf = as_lazy(log)
    stats = spec.statistics(lf, buckets=buckets, seed=int(seed))  # the one pass over the log
    return bootstrap_statistics(spec, stats, n=n, seed=seed, buckets=buckets,
                                ci_method=ci_method, progress=progress, **kw)  # fmt: skip


def bootstrap_statistics(spec: Any, stats: dict[str, Any], *, n: int, seed: int, buckets: int,
                         ci_method: str = "normal", progress: Callable[[int], None] | None = None,
                         **kw: Any) -> Propensities:  # fmt: skip
    """:func:`bootstrap` on statistics already summed per session bucket (``spec``: the
    estimator's entry of :data:`~._registry.ESTIMATORS`)."""
    full = spec.fit(stats, **spec.fit_kwargs, **kw)
    reps, failed = _replicates(spec, stats, full, n=n, buckets=buckets, seed=seed,
                               progress=progress, kw=kw)  # fmt: skip
    with np.errstate(invalid="ignore"):
        finite = np.where(np.isfinite(reps), reps, np.nan)
        se = np.nanstd(finite, axis=0, ddof=1) if n > 1 else np.full(full.K, np.nan)
    warns = _warnings(full, reps, n, failed)
    method = full.method if full.method == "em" else f"{full.method}+bootstrap"
    return Propensities(
        theta=full.theta,
        se=se,
        method=method,
        n_sessions=full.n_sessions,
        n=full.n,
        warnings=tuple(warns),
        absolute=full.absolute,
        replicates=reps,
        ci_method=ci_method,
        info={
            **full.info,
            "interval": f"session Poisson bootstrap, {n} replicates over "
            f"{buckets} session buckets, {ci_method}",
            "bootstrap_seed": int(seed),
        },
    )


def _replicates(spec, stats, full: Propensities, *, n: int, buckets: int, seed: int,
                progress, kw: dict) -> tuple[np.ndarray, int]:  # fmt: skip
    """log θ of ``n`` replicates ``[n, K]`` (NaN where not identified) and how many failed.

    Each replicate refits on the statistics reweighted by Poisson(1) bucket
    weights, not on the log.
    """
    rng = np.random.default_rng(np.random.SeedSequence(int(seed)))
    reps = np.full((n, full.K), np.nan)
    failed = 0
    for b in range(n):
        w = rng.poisson(1.0, buckets).astype(np.float64)
        try:
            est = spec.fit(reweight(stats, w), **spec.fit_kwargs, **kw)
        except EstimationError:
            failed += 1
            est = None
        if est is not None:
            k = min(est.K, full.K)
            with np.errstate(divide="ignore"):
                reps[b, :k] = np.log(est.theta[:k])
        if progress is not None:
            progress(1)
    reps[:, ~full.identified] = np.nan
    return reps, failed


def _warnings(full: Propensities, reps: np.ndarray, n: int, failed: int) -> list[str]:
    """The estimate's warnings, plus dropped replicates and degenerate positions."""
    warns = list(full.warnings)
    if failed:
        warns.append(f"bootstrap: {failed} of {n} replicates were not identified and were dropped")
    bad = np.isfinite(full.theta) & (np.isfinite(reps).sum(axis=0) < 0.9 * (n - failed))
    for p in np.flatnonzero(bad) + 1:
        warns.append(
            f"bootstrap: position {p} was degenerate (0 or NaN) in more than 10% "
            "of the replicates; its interval is unreliable"
        )
    return warns
