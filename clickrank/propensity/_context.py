r"""Examination curves per context (device, layout, query class), shrunk and tested.

The log's context columns split its sessions into contexts :math:`c = 1..C` (each
combination of the columns' values). Each context's curve is estimated from its own
sessions by the chosen design (:func:`.swap`, :func:`.randpair`): :math:`y_{ck} =
\log\hat\theta_{ck}` with standard error :math:`s_{ck}`. The counts of every context come
from one aggregation of the log, grouped by the context columns as well.

**Shrinkage** (parametric empirical Bayes; Morris (1983)). Per position :math:`k`, the
contexts' log propensities are drawn around a common curve,
:math:`\log\theta_{ck} \sim N(\mu_k, \tau_k^2)`, and observed with noise,
:math:`y_{ck} \mid \theta_{ck} \sim N(\log\theta_{ck}, s_{ck}^2)`. :math:`\tau_k^2` is
the DerSimonian & Laird (1986) moment estimate across contexts and :math:`\mu_k` the
precision-weighted mean with weights :math:`1/(s_{ck}^2 + \tau_k^2)` (the pooled curve
of the contexts). The posterior mean and variance are

.. math::
    \log\tilde\theta_{ck} = (1 - B_{ck})\,y_{ck} + B_{ck}\,\hat\mu_k, \qquad
    B_{ck} = \frac{s_{ck}^2}{s_{ck}^2 + \hat\tau_k^2}, \qquad
    \mathrm{Var} = (1 - B_{ck})\,s_{ck}^2 + B_{ck}^2\,\mathrm{Var}\,\hat\mu_k,

so a context with few sessions (large :math:`s_{ck}`) moves toward the common curve and
a large one keeps its own estimate; :math:`\hat\tau_k = 0` (the contexts agree within
their noise) pools them completely. :math:`B_{ck}` is reported as ``shrinkage``. The
posterior interval is normal on the log scale; the plug-in :math:`\hat\tau_k` from a few
contexts is itself uncertain, which it does not carry (Morris's correction adds only
:math:`\mathrm{Var}\,\hat\mu_k`), so the reported interval is its hull with the
context's own interval (:meth:`ContextCurves.bounds`).

**Homogeneity** (is one curve enough?). The Wald test of :math:`H_0:
\log\theta_{1\cdot} = \dots = \log\theta_{C\cdot}` over the positions every context
identifies: with :math:`V_c` the covariance of context :math:`c`'s vector of
:math:`y_{ck}` and :math:`\bar y = (\sum_c V_c^{-1})^{-1}\sum_c V_c^{-1} y_c`,

.. math::
    W = \sum_c (y_c - \bar y)^\top V_c^{-1} (y_c - \bar y) \;\sim\; \chi^2_{(C - 1)\,m}

under :math:`H_0` (:math:`m` positions), the multivariate form of Cochran's Q. The
swap estimator's route ``top`` divides every position by the same slot-1 click rate, so
:math:`V_c` has that rate's variance off the diagonal; other routes' ratios share no
sessions in their denominators and :math:`V_c` is diagonal.

References: Morris, C. N. (1983), "Parametric empirical Bayes inference: theory and
applications", JASA 78(381); DerSimonian, R. & Laird, N. (1986), "Meta-analysis in
clinical trials", Controlled Clinical Trials 7(3).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl
from scipy.stats import chi2

from .._core._validation import EstimationError, InputError
from ..clicklog import LOG_SCHEMA
from ..engine import log_schema
from ._context_result import ContextCurves
from ._result import Propensities
from ._swap import _KINDS, pair_from_counts, pair_statistics

__all__ = ["by_context", "shrink", "homogeneity", "check_context", "CONTEXT_METHODS"]

#: Estimators that give per-context curves (their counts split by context in one pass).
CONTEXT_METHODS = ("swap", "randpair")
#: Most contexts (value combinations) estimated one curve each.
MAX_CONTEXTS = 100


def context_columns(context: Any) -> tuple[str, ...]:
    """``context`` (a column name or a list of them) as a tuple of distinct names."""
    cols = (context,) if isinstance(context, str) else context
    try:
        cols = tuple(cols)
    except TypeError:
        raise InputError(
            f"context must be a column name or a list of them, got {type(context).__name__}"
        ) from None
    if not cols or not all(isinstance(c, str) and c for c in cols):
        raise InputError(f"context must name one or more log columns, got {context!r}")
    if len(set(cols)) != len(cols):
        raise InputError(f"context names a column twice: {list(cols)}")
    return cols


def check_context(lf: Any, context: Any) -> tuple[str, ...]:
    """The context columns, checked against the log's schema (no data read)."""
    cols = context_columns(context)
    _check_columns(lf, cols)
    return cols


def _check_columns(lf: Any, cols: tuple[str, ...]) -> None:
    """Each context column is in the log and categorical (names the column otherwise)."""
    schema = log_schema(lf)
    for c in cols:
        if c not in schema:
            others = [n for n in schema.names() if n not in LOG_SCHEMA]
            hint = f"; its other columns: {', '.join(others)}" if others else ""
            raise InputError(f"context column {c!r} is not in the log{hint}")
        dt = schema[c]
        if not (
            dt in (pl.String, pl.Categorical, pl.Boolean)
            or isinstance(dt, pl.Enum)
            or dt.is_integer()
        ):
            raise InputError(
                f"context column {c!r} has dtype {dt}; expected a category "
                "(Categorical, Enum, String, integer or Boolean)"
            )


def _contexts_of(stats: dict[str, Any], cols: tuple[str, ...]) -> tuple[np.ndarray, list]:
    """Each row's context index and the contexts' values, checked: no nulls, at most
    :data:`MAX_CONTEXTS` of them."""
    frame = pl.DataFrame({c: pl.Series(c, stats[c], dtype=pl.String) for c in cols})
    for c in cols:
        nulls = frame[c].is_null()
        if nulls.any():
            shown = int(np.asarray(stats["n"])[nulls.to_numpy()].sum())
            raise InputError(
                f"context column {c!r} has null values ({shown:,} displayed results); "
                "give those sessions a value (e.g. 'unknown') or drop them"
            )
    keys = frame.unique(maintain_order=False).sort(list(cols))
    if keys.height > MAX_CONTEXTS:
        many = max(cols, key=lambda c: frame[c].n_unique())
        raise InputError(
            f"context column {many!r} gives {keys.height:,} distinct contexts; one curve "
            f"each is estimated for at most {MAX_CONTEXTS}: group the values into fewer "
            "categories (the frequent ones and 'other'), or model θ as a function of "
            "context features"
        )
    index = frame.join(keys.with_row_index("_i"), on=list(cols), how="left")["_i"].to_numpy()
    return index.astype(np.int64), keys.rows()


def _label(cols: tuple[str, ...], values: tuple) -> str:
    return ", ".join(f"{c}={v!r}" for c, v in zip(cols, values, strict=True))


def shrink(log_theta: np.ndarray, se: np.ndarray) -> dict[str, np.ndarray]:
    r"""The empirical-Bayes curves of the module docstring from the contexts' ``[C, K]``
    log estimates and their SEs: ``theta``, ``se`` (log scale), ``shrinkage``, ``prior``
    (:math:`\exp\hat\mu`) and ``tau``.

    Cells without a usable estimate (NaN, zero clicks, or the reference position with SE
    0) keep their raw value; their shrinkage is NaN (0 at the reference position).
    """
    y = np.asarray(log_theta, dtype=float)
    s = np.asarray(se, dtype=float)
    ok = np.isfinite(y) & np.isfinite(s) & (s > 0)
    m = ok.sum(axis=0)
    with np.errstate(all="ignore"):
        v = np.where(ok, s * s, np.nan)
        w = np.where(ok, 1.0 / v, 0.0)
        yy = np.where(ok, y, 0.0)
        sw = w.sum(axis=0)
        fixed = (w * yy).sum(axis=0) / sw
        q = (w * (yy - fixed) ** 2).sum(axis=0)
        tau2 = np.maximum(0.0, (q - (m - 1)) / (sw - (w * w).sum(axis=0) / sw))
        tau2 = np.where(m >= 2, tau2, np.nan)
        wr = np.where(ok, 1.0 / (v + np.nan_to_num(tau2)), 0.0)
        mu = (wr * yy).sum(axis=0) / wr.sum(axis=0)
        var_mu = 1.0 / wr.sum(axis=0)
        b = np.where(ok & (m >= 2), v / (v + tau2), np.where(ok, 0.0, np.nan))
        post = np.where(ok, y + np.nan_to_num(b) * (mu - y), y)
        var = np.where(ok, (1 - b) * v + b * b * var_mu, s * s)
    exact = np.isfinite(y) & (s == 0)  # the reference position: nothing to shrink
    b = np.where(exact, 0.0, b)
    agreed = exact.all(axis=0) & (y == y[:1]).all(axis=0)  # known exactly, the same everywhere
    return {
        "theta": np.exp(post),
        "se": np.sqrt(var),
        "shrinkage": b,
        "prior": np.where(m >= 1, np.exp(mu), np.where(agreed, np.exp(y[0]), np.nan)),
        "tau": np.sqrt(tau2),
    }


def _log_theta(curves: list[Propensities]) -> np.ndarray:
    """``[C, K]`` log θ of the contexts' curves (-inf where a position had no clicks)."""
    with np.errstate(divide="ignore"):
        return np.log(np.array([c.theta for c in curves]))


def _covariance(curve: Propensities, keep: np.ndarray) -> np.ndarray:
    """Covariance of one context's log estimates at positions ``keep`` (the module
    docstring's :math:`V_c`)."""
    se = curve.se[keep]
    cov = np.diag(se * se)
    cc = curve.ci_counts
    if curve.info.get("route") == "top" and cc is not None:
        c_den, n_den = cc[keep, 2], cc[keep, 3]
        shared = float(((1 - c_den / n_den) / c_den)[0])  # the one slot-1 rate's variance
        cov += shared * (1 - np.eye(se.size))
    return cov


def homogeneity(curves: list[Propensities]) -> dict[str, Any]:
    """The Wald test of one curve for all contexts (the module docstring)."""
    y = _log_theta(curves)
    s = np.array([c.se for c in curves])
    keep = np.all(np.isfinite(y) & np.isfinite(s) & (s > 0), axis=0)
    keep[0] = False  # the reference position is 1 everywhere
    positions = (np.flatnonzero(keep) + 1).tolist()
    out = {"test": "Wald chi-square of equal log θ across contexts", "positions": positions}
    if len(curves) < 2 or not positions:
        return {**out, "statistic": np.nan, "df": 0, "p_value": np.nan}
    precisions = [np.linalg.inv(_covariance(c, keep)) for c in curves]  # a loop over contexts
    gaps = [yc[keep] for yc in y]
    total = np.sum(precisions, axis=0)
    pairs = list(zip(precisions, gaps, strict=True))
    common = np.linalg.solve(total, np.sum([p @ g for p, g in pairs], axis=0))
    stat = float(sum((g - common) @ p @ (g - common) for p, g in pairs))
    df = (len(curves) - 1) * len(positions)
    return {**out, "statistic": stat, "df": df, "p_value": float(chi2.sf(stat, df))}


def by_context(
    lf: Any,
    context: Any,
    *,
    design: str = "swap",
    route: str = "auto",
    K: int | None = None,
) -> Propensities:
    """The pooled estimate of ``design`` with its per-context curves (``contexts``).

    One aggregation of the log grouped by the context columns too; the pooled curve is
    the design's estimate on all sessions (the same as without ``context``), each
    context's raw curve its estimate on its own sessions at the pooled route and ``K``.

    Raises
    ------
    InputError
        A context column missing from the log, not categorical, or with nulls; more
        than :data:`MAX_CONTEXTS` contexts; a context without sessions of the design.
    """
    cols = check_context(lf, context)
    stats = pair_statistics(lf, by=cols)
    index, values = _contexts_of(stats, cols)
    pooled = pair_from_counts(stats, design=design, route=route, K=K)
    base = ("kind", "a", "b", "position", "n", "c")
    code = _KINDS[design]
    curves = []
    for i, vals in enumerate(values):  # a loop over contexts, each on its small count table
        mine = index == i
        sub = {k: np.asarray(stats[k])[mine] for k in base}
        if not ((sub["kind"] == code) & (sub["a"] == 1) & (sub["b"] >= 2)).any():
            raise InputError(
                f"context {_label(cols, vals)} has no {design} sessions (intervention "
                f"{design!r} with rank 1 swapped), so its curve cannot be estimated; drop "
                "its sessions or merge the value into another"
            )
        try:
            curves.append(
                pair_from_counts(sub, design=design, route=pooled.info["route"], K=pooled.K)
            )
        except EstimationError as err:
            raise EstimationError(f"context {_label(cols, vals)}: {err}") from None
    fit = shrink(_log_theta(curves), np.array([c.se for c in curves]))
    table = ContextCurves(
        columns=cols,
        values=tuple(tuple(v) for v in values),
        curves=tuple(curves),
        homogeneity=homogeneity(curves),
        **fit,
    )
    return replace(pooled, contexts=table, info={**pooled.info, "context": list(cols)})
