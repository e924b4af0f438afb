r"""Examination curves per context (device, layout, query class), shrunk and tested.

The log's context columns split its sessions into contexts :math:`c = 1..C` (each
combination of the columns' values). Each context's curve is estimated from its own
sessions by the chosen estimator, at the pooled estimate's ``K``: :math:`y_{ck} =
\log\hat\theta_{ck}` with standard error :math:`s_{ck}` (the estimator's own, e.g. the
observed information for EM). The counts of the pair designs (:func:`.swap`,
:func:`.randpair`), of the randomized estimator, and the (query, doc, position) cells of
harvesting and EM come from one aggregation split by the context columns, the pooled
counts being their sums; regression EM runs on the log restricted to each context's
sessions, once per context. The pooled curve is always the estimator on the whole log,
the same numbers as without a context (EM's with its session bootstrap).

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
:math:`V_c` has that rate's variance off the diagonal; the randomized estimator too, with
each position's covariance with slot 1 (the delta method, the co-clicks of two lower
positions left out); EM's contexts give :math:`V_c` as the inverse of their observed
information, a bootstrapped estimate (regression EM) as the covariance of its
replicates; otherwise :math:`V_c` is diagonal (exact for the other swap routes, whose
ratios share no sessions in their denominators, an approximation for harvesting, whose
ratios share position 1).

References: Morris, C. N. (1983), "Parametric empirical Bayes inference: theory and
applications", JASA 78(381); DerSimonian, R. & Laird, N. (1986), "Meta-analysis in
clinical trials", Controlled Clinical Trials 7(3).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import polars as pl
from scipy.stats import chi2

from .._core._threads import fit_threads
from .._core._validation import EstimationError, InputError, available_cpus
from ..clicklog import LOG_SCHEMA, context_columns
from ..engine import is_spark, log_schema
from ..specs.names import PROPENSITY_METHODS
from ._context_result import ContextCurves
from ._result import Propensities
from ._stats import resolve_K
from ._swap import _KINDS, pair_from_counts, pair_statistics

__all__ = ["by_context", "shrink", "homogeneity", "check_context", "CONTEXT_METHODS"]

#: Estimators that give per-context curves: every one (``auto`` through the one it picks).
CONTEXT_METHODS = tuple(m for m in PROPENSITY_METHODS if m != "auto")
#: The designs whose per-context counts come from the pooled aggregation.
PAIR_DESIGNS = ("swap", "randpair")
#: The estimators of (query, doc, position) cells: one aggregation split by context too.
CELL_METHODS = ("harvest-allpairs", "harvest-pivot", "harvest-adjacent", "em")
#: Most contexts (value combinations) estimated one curve each.
MAX_CONTEXTS = 100


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
    :data:`MAX_CONTEXTS` of them. ``stats`` holds the context columns and the rows'
    displayed results ``n``."""
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
            "categories (the frequent ones and 'other'), or join numbers describing each "
            "value to the log and model θ as a function of them (context_features=, "
            "method 'em')"
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
    given = curve.info.get("covariance")
    if given is not None:  # EM's observed information
        full = np.array([[np.nan if x is None else x for x in row] for row in given])
        return full[np.ix_(keep, keep)]
    reps = curve.replicates
    if reps is not None and keep.sum() >= 1:
        r = reps[:, keep]
        r = r[np.isfinite(r).all(axis=1)]
        if r.shape[0] > 2 * r.shape[1]:  # enough replicates for a full-rank covariance
            return np.atleast_2d(np.cov(r, rowvar=False))
    cov = np.diag(se * se)
    cc = curve.ci_counts
    slot1 = curve.info.get("slot1")
    if slot1 is not None:  # randomized: every ratio divides by the same slot-1 rate
        a = np.array([np.nan if x is None else x for x in slot1["cov"]])[keep]
        off = slot1["var"] - a[:, None] - a[None, :]
        cov += np.where(np.eye(se.size, dtype=bool), 0.0, np.nan_to_num(off))
    elif curve.info.get("route") == "top" and cc is not None:
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
    pooled: Propensities | None = None,
    **kw: Any,
) -> Propensities:
    """The pooled estimate of ``design`` with its per-context curves (``contexts``).

    The pooled curve is the estimator on all sessions (the same as without
    ``context``), each context's raw curve its estimate on its own sessions at the
    pooled ``K`` (and, for the pair designs, the pooled route). ``kw`` goes to the
    estimator (``K``, ``route``, ``n_boot``, ``seed``, ``data``, ...); ``pooled``: its
    estimate on the whole log when the caller has it (not for the pair designs, whose
    pooled counts come with the contexts').

    Raises
    ------
    InputError
        A context column missing from the log, not categorical, or with nulls; more
        than :data:`MAX_CONTEXTS` contexts; a context without sessions of the design.
    """
    cols = check_context(lf, context)
    if design in PAIR_DESIGNS:
        return _pair_by_context(lf, cols, design=design, **kw)
    if is_spark(lf):
        raise InputError(
            f"per-context curves of {design!r} are estimated on a polars log, not a Spark "
            f"DataFrame (swap and randpair split theirs on Spark): write the log to parquet, "
            "or estimate one pooled curve"
        )
    if design in CELL_METHODS:
        return _cells_by_context(lf, cols, design=design, pooled=pooled, **kw)
    sessions = (
        lf.filter(pl.col("position") == 1)
        .group_by(list(cols))
        .agg(n=pl.len())
        .collect(engine="streaming")
    )
    _, values = _contexts_of({c: sessions[c] for c in (*cols, "n")}, cols)
    if design == "randomized":
        return _randomized_by_context(lf, cols, values, pooled=pooled, **kw)
    pooled = _estimate(lf, design, **kw) if pooled is None else pooled
    kw = {k: v for k, v in kw.items() if k != "progress"}  # a bar counts the pooled fit's
    curves = []
    for vals in values:  # a loop over contexts, each an estimate on its own sessions
        mine = pl.all_horizontal(
            [pl.col(c).cast(pl.String) == v for c, v in zip(cols, vals, strict=True)]
        )
        try:
            curves.append(_estimate(lf.filter(mine), design, **{**kw, "K": pooled.K}))
        except (EstimationError, InputError) as err:
            raise type(err)(f"context {_label(cols, vals)}: {err}") from None
    return _with_contexts(pooled, cols, values, curves)


def _estimate(lf: Any, design: str, **kw: Any) -> Propensities:
    """One estimate of ``design`` (a method of :data:`CONTEXT_METHODS`) on ``lf``."""
    if design == "regression-em":
        from ._regression_em import regression_em

        return regression_em(lf, **kw)
    from ._registry import ESTIMATORS

    return ESTIMATORS[design].function(lf, **kw)


def _cells_by_context(
    lf: Any, cols: tuple[str, ...], *, design: str, pooled: Propensities | None, **kw: Any
) -> Propensities:
    """:func:`by_context` for harvesting and EM: one aggregation of the (query, doc,
    position) cells split by context (with EM's session buckets when the pooled estimate
    bootstraps); the pooled cells are their sums, the same as without a context. A
    context's EM curve takes its standard errors from the observed information (one fit
    each, :func:`~._em.em_from_cells`), unless ``constraint="all"``, whose fit has none:
    then from a session bootstrap of the context's own cells."""
    from ._bootstrap import BUCKETS, bootstrap_statistics
    from ._harvest import cell_statistics
    from ._registry import ESTIMATORS

    spec = ESTIMATORS[design]
    if design == "em":
        n_boot, seed = int(kw.pop("n_boot", 100)), int(kw.pop("seed", 0))
        progress = kw.pop("progress", None)
    else:
        n_boot, seed, progress = 0, 0, None
    information = design == "em" and kw.get("constraint", "observed") == "observed"
    buckets = BUCKETS if n_boot and (pooled is None or not information) else 0
    stats = cell_statistics(lf, buckets=buckets, seed=seed, by=cols,
                            pooled_buckets=information)  # fmt: skip
    index, values = _contexts_of(stats, cols)
    whole, parts = _split_cells(stats, cols, index, values, buckets, pooled_only=information)

    def fit(cells: dict[str, Any], **more: Any) -> Propensities:
        if n_boot:
            return bootstrap_statistics(spec, cells, n=n_boot, seed=seed, buckets=buckets,
                                        **{**kw, **more})  # fmt: skip
        return spec.fit(cells, **spec.fit_kwargs, **{**kw, **more})

    if pooled is None and n_boot:  # the pooled bootstrap, reporting its progress
        pooled = fit(whole, progress=progress)
    if information:  # one fit per context, its intervals from the observed information
        n_boot = 0
        kw = {**kw, "information": True}
    # the pooled fit (unless given or bootstrapped) and the contexts' fits, each alone on
    # its cells, on the free cores: the same numbers on any number of threads
    K = pooled.K if pooled is not None else resolve_K(kw.get("K"), int(whole["position"].max()),
                                                       design)  # fmt: skip
    jobs = ([] if pooled is not None else [(None, whole)]) + list(zip(values, parts, strict=True))

    def one(job: tuple[Any, dict[str, Any]]) -> Propensities:
        vals, cells = job
        if vals is None:
            return fit(cells)
        try:
            return fit(cells, K=K)
        except EstimationError as err:
            raise EstimationError(f"context {_label(cols, vals)}: {err}") from None

    threads = min(fit_threads(available_cpus()), len(jobs))
    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            fits = list(pool.map(one, jobs))
    else:
        fits = [one(job) for job in jobs]  # a loop over contexts
    if pooled is None:
        pooled, fits = fits[0], fits[1:]
    return _with_contexts(pooled, cols, values, fits)


def _randomized_by_context(
    lf: Any, cols: tuple[str, ...], values: list, *, pooled: Propensities | None, **kw: Any
) -> Propensities:
    """:func:`by_context` for the randomized estimator: its counts per position split by
    context in one pass (``values``: every context of the log, randomized or not)."""
    from ._randomized import randomized_from_counts, randomized_statistics

    stats = randomized_statistics(lf, by=cols)
    pos = stats["position"]
    starts = np.flatnonzero(np.r_[True, pos[1:] != pos[:-1]])  # rows sorted by position
    fields = ("n", "c", "cc")
    whole = {"position": pos[starts], **{f: np.add.reduceat(stats[f], starts) for f in fields}}
    if pooled is None:
        pooled = randomized_from_counts(whole, **kw)
    rows = [tuple(r) for r in pl.DataFrame(
        {c: pl.Series(c, stats[c], dtype=pl.String) for c in cols}).rows()]  # fmt: skip
    curves = []
    for vals in values:  # a loop over contexts, each on its rows of the small table
        mine = np.array([r == tuple(vals) for r in rows], dtype=bool)
        part = {"position": pos[mine], **{f: stats[f][mine] for f in fields}}
        try:
            curve = randomized_from_counts(part, **{**kw, "K": pooled.K})
        except EstimationError as err:
            raise EstimationError(f"context {_label(cols, vals)}: {err}") from None
        curves.append(replace(curve, info={**curve.info, "slot1": _slot1_terms(part, curve.K)}))
    return _with_contexts(pooled, cols, values, curves)


def _slot1_terms(part: dict[str, np.ndarray], K: int) -> dict[str, Any]:
    r"""What the randomized ratios :math:`\log(\bar c_p/\bar c_1)` share through slot 1:
    ``var``, :math:`\mathrm{Var}\log\bar c_1`, and ``cov``, :math:`\mathrm{Cov}(\log\bar
    c_p, \log\bar c_1)` per position (the delta method of :func:`~._randomized.randomized`),
    so that two ratios covary by ``var - cov[p] - cov[q]`` (their own co-clicks left out)."""
    n, c, cc = np.zeros(K), np.zeros(K), np.zeros(K)
    keep = part["position"] <= K
    idx = part["position"][keep] - 1
    n[idx], c[idx], cc[idx] = part["n"][keep], part["c"][keep], part["cc"][keep]
    with np.errstate(divide="ignore", invalid="ignore"):
        m = c / n
        cov = (cc / n - m * m[0]) / (n[0] * m * m[0])  # n_1p = n_p sessions show both
    var = (1 - m[0]) / (n[0] * m[0])
    return {"var": float(var), "cov": [float(x) if np.isfinite(x) else None for x in cov]}


def _split_cells(
    stats: dict[str, Any], cols: tuple[str, ...], index: np.ndarray, values: list,
    buckets: int, pooled_only: bool = False,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:  # fmt: skip
    """The pooled cells (each (query, doc, position)'s sums over contexts) and each
    context's cells, from :func:`~._harvest.cell_statistics` split ``by`` the context;
    ``pooled_only``: its bucket sums are the pooled cells' (``pooled_buckets``), and the
    contexts' cells have none."""
    from scipy import sparse

    from ._stats import BUCKET, BY_BUCKET

    g, pos = stats["g"], stats["position"]
    first = np.r_[True, (g[1:] != g[:-1]) | (pos[1:] != pos[:-1])]  # rows sorted by cell
    starts = np.flatnonzero(first)
    whole = {
        "g": g[starts],
        "position": pos[starts],
        "n": np.add.reduceat(stats["n"], starts),
        "c": np.add.reduceat(stats["c"], starts),
        "n_sessions": stats["n_sessions"],
    }
    sess = stats["sessions_by"]
    key = {tuple(v): i for i, v in enumerate(values)}
    sess_ctx = np.array([key[tuple(r)] for r in sess.select(
        [pl.col(c).cast(pl.String) for c in cols]).rows()], dtype=np.int64)  # fmt: skip
    n_sess = sess["n_sessions"].to_numpy()
    own = bool(buckets) and not pooled_only  # each context bootstraps its own cells
    if buckets and pooled_only:
        whole[BY_BUCKET] = stats[BY_BUCKET]
    elif own:
        by = stats[BY_BUCKET]
        cell = np.cumsum(first) - 1
        pool = sparse.csr_matrix((np.ones(g.size), (cell, np.arange(g.size))))
        whole[BY_BUCKET] = {"n": pool @ by["n"], "c": pool @ by["c"],
                            "n_sessions": by["n_sessions"]}  # fmt: skip
        bucket = sess[BUCKET].to_numpy()
    parts = []
    for i in range(len(values)):  # a loop over contexts
        mine = index == i
        part = {
            "g": np.unique(g[mine], return_inverse=True)[1],
            "position": pos[mine],
            "n": stats["n"][mine],
            "c": stats["c"][mine],
            "n_sessions": float(n_sess[sess_ctx == i].sum()),
        }
        if own:
            here = sess_ctx == i
            part[BY_BUCKET] = {
                "n": by["n"][mine],
                "c": by["c"][mine],
                "n_sessions": sparse.csr_matrix(
                    (n_sess[here], (np.zeros(here.sum(), dtype=np.int64), bucket[here])),
                    shape=(1, buckets),
                ),
            }
        parts.append(part)
    return whole, parts


def _pair_by_context(
    lf: Any, cols: tuple[str, ...], *, design: str, route: str = "auto", K: int | None = None
) -> Propensities:
    """:func:`by_context` for swap and randpair: one aggregation grouped by the context
    columns too, each context's curve from its share of the counts."""
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
    return _with_contexts(pooled, cols, values, curves)


def _with_contexts(
    pooled: Propensities, cols: tuple[str, ...], values: list, curves: list[Propensities]
) -> Propensities:
    """``pooled`` holding the contexts' raw curves, their shrunk curves and the test."""
    fit = shrink(_log_theta(curves), np.array([c.se for c in curves]))
    table = ContextCurves(
        columns=cols,
        values=tuple(tuple(v) for v in values),
        curves=tuple(curves),
        homogeneity=homogeneity(curves),
        **fit,
    )
    return replace(pooled, contexts=table, info={**pooled.info, "context": list(cols)})
