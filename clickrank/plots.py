r"""Bias-analysis figures: position bias, its correction, and what it does to learning.

Every function reads results or a click log (DESIGN §2), does at most a light
aggregation (through :mod:`clickrank.clicklog`, :mod:`clickrank.lambdas`, the
result objects' own ``plot`` methods), and returns a
:class:`matplotlib.figure.Figure`. Each takes ``ax=`` (draw into an existing
axes) and ``path=`` (also save a PNG, written atomically: a temporary file in
the same folder, then :func:`os.replace`). Figures are created with
:class:`matplotlib.figure.Figure`, never through pyplot, so nothing is left
open in pyplot's figure manager and no display is needed (Agg).

==========================  =====================================================
function                    shows
==========================  =====================================================
:func:`ctr_by_position`     observed CTR vs IPS-corrected CTR vs true relevance
:func:`propensity_vs_truth` estimated θ_p with CI band (one or several methods), truth
:func:`click_heatmap`       CTR per position × relevance label
:func:`learning_curves`     NDCG@10 vs training sessions per method (log x), CI bands
:func:`severity_curves`     NDCG@10 vs position-bias severity η per method
:func:`power_curves`        power of interleaving / A/B vs impressions
:func:`forces`              RankNet vs LambdaRank forces on one query
:func:`skip_above_bias`     how often skip-above preferences contradict the labels
                            (table: :func:`skip_above_pairs`)
==========================  =====================================================

See ``docs/plots.md`` for how to read each figure.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from scipy.stats import norm

from . import clicklog
from ._figures import finish as _finish
from ._figures import new_axes as _new_axes
from ._segments import rank_order
from ._validation import InputError, check_alpha, check_positive

__all__ = [
    "ctr_by_position",
    "propensity_vs_truth",
    "click_heatmap",
    "learning_curves",
    "severity_curves",
    "power_curves",
    "forces",
    "skip_above_bias",
    "skip_above_pairs",
    "CURVE_COLUMNS",
]

#: Columns of the frame read by :func:`learning_curves` (with ``sessions``) and
#: :func:`severity_curves` (with ``eta``).
CURVE_COLUMNS = ("method", "mean", "lower", "upper")

# one colour per well-known method, so every figure of a report agrees
_METHOD_COLORS = {
    "naive": "#d62728",
    "ips": "#1f77b4",
    "skip-above": "#ff7f0e",
    "skip-above-ips": "#9467bd",
    "oracle": "#2ca02c",
    "production": "#7f7f7f",
    "logging": "#7f7f7f",
}
_REFERENCE_METHODS = ("oracle", "production", "logging")


# -- shared helpers ---------------------------------------------------------------------


def _lazy_log(log: Any, needed: Sequence[str], what: str) -> pl.LazyFrame:
    if not isinstance(log, (pl.DataFrame, pl.LazyFrame)):
        raise InputError(
            f"{what}: log must be a polars DataFrame or LazyFrame (clickrank.clicklog.read_log), "
            f"got {type(log).__name__}"
        )
    lf = log.lazy()
    schema = lf.collect_schema()
    missing = [c for c in needed if c not in schema]
    if missing:
        hint = (
            " (true relevance labels exist only in simulated logs; simulate() writes them)"
            if "label" in missing
            else ""
        )
        raise InputError(f"{what} needs log column(s) {missing}{hint}; log has {schema.names()}")
    return lf


def _filter_intervention(lf: pl.LazyFrame, intervention: str | None, what: str) -> pl.LazyFrame:
    if intervention is None:
        return lf
    if "intervention" not in lf.collect_schema():
        raise InputError(
            f"{what}: intervention={intervention!r} given but the log has no 'intervention' column"
        )
    return lf.filter(pl.col("intervention").cast(pl.String) == intervention)


def _color(method: str, i: int) -> str:
    return _METHOD_COLORS.get(str(method).lower(), f"C{(i + 3) % 10}")


def _as_polars(frame: Any, what: str) -> pl.DataFrame:
    if isinstance(frame, pl.LazyFrame):
        return frame.collect()
    if isinstance(frame, pl.DataFrame):
        return frame
    if isinstance(frame, Mapping):
        try:
            return pl.DataFrame(dict(frame))
        except (TypeError, ValueError, pl.exceptions.PolarsError) as err:
            raise InputError(f"{what}: cannot build a table from the mapping: {err}") from None
    if type(frame).__module__.startswith("pandas") and hasattr(frame, "columns"):
        # column by column (no pyarrow needed); NaN in float columns means missing
        cols = {}
        for c in frame.columns:
            arr = frame[c].to_numpy()
            cols[str(c)] = (
                pl.Series(str(c), arr, nan_to_null=True)
                if arr.dtype.kind == "f"
                else pl.Series(str(c), frame[c].tolist())
            )
        return pl.DataFrame(cols)
    raise InputError(
        f"{what}: expected a polars or pandas DataFrame (or a dict of columns), "
        f"got {type(frame).__name__}"
    )


def _empty_check(n: int, what: str, detail: str) -> None:
    if n == 0:
        raise InputError(f"{what}: nothing to plot ({detail})")


# -- 1. CTR by position --------------------------------------------------------------------


def _propensity_arrays(propensities: Any, name: str) -> tuple[np.ndarray, np.ndarray, str]:
    """``(theta / theta_1, se of log theta, method)`` of a Propensities or an array."""
    theta = np.asarray(getattr(propensities, "theta", propensities), dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0:
        raise InputError(f"{name} must be a Propensities or a 1-d array theta[p-1]")
    if not np.isfinite(theta[0]) or theta[0] <= 0:
        raise InputError(f"{name}: theta at position 1 must be finite and > 0")
    if np.any(theta[np.isfinite(theta)] <= 0):
        raise InputError(f"{name}: propensities must be > 0")
    se = np.asarray(getattr(propensities, "se", np.zeros_like(theta)), dtype=np.float64)
    se = np.where(np.isfinite(se), se, 0.0)
    return theta / theta[0], se, str(getattr(propensities, "method", "given θ"))


def _relevance_function(relevance: Any):
    """A labels -> P(click | examined) function from a click model or a relevance map."""
    from .clickmodels._relevance import as_relevance_map, evaluate_map

    rel = getattr(relevance, "attractiveness", relevance)
    if hasattr(relevance, "relevance") and not hasattr(relevance, "attractiveness"):
        raise InputError(
            f"relevance: {type(relevance).__name__} clicks depend on the position beyond "
            "examination; pass its relevance map explicitly"
        )
    rel = as_relevance_map(rel, name="relevance")
    return lambda y: evaluate_map(rel, y, name="relevance")


def ctr_by_position(
    log: pl.DataFrame | pl.LazyFrame,
    propensities: Any = None,
    true_theta: Any = None,
    *,
    relevance: Any = None,
    intervention: str | None = None,
    relevant_label: float = 1.0,
    alpha: float = 0.05,
    ax: Axes | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    r"""Observed CTR per position, IPS-corrected CTR, and the true relevance per position.

    Under the PBM, :math:`E[\mathrm{CTR}_p] = \theta_p\,\bar\alpha_p` with
    :math:`\bar\alpha_p` the mean :math:`P(\text{click} \mid \text{examined})`
    of the documents shown at :math:`p`. The observed CTR falls with position
    much faster than :math:`\bar\alpha_p`; dividing by the propensity (IPS,
    Joachims et al. WSDM 2017, Eq. 5) gives :math:`\mathrm{CTR}_p / \hat\theta_p
    \approx \theta_1 \bar\alpha_p`, which should lie on the relevance curve.

    Parameters
    ----------
    log : polars DataFrame or LazyFrame
        Click log (DESIGN §2).
    propensities : Propensities or array ``theta[p-1]``, optional
        Estimated propensities (normalized here to :math:`\theta_1 = 1`). Draws
        the corrected CTR, with an interval that combines the Wilson interval of
        the CTR and the propensity's interval on the log scale
        (:math:`[\ell / \hat\theta\, e^{-z s}, u / \hat\theta\, e^{z s}]`, ``s``
        the SE of :math:`\log\hat\theta_p`; conservative).
    true_theta : array, optional
        The true examination curve (simulations). With ``relevance`` it puts the
        relevance curve on the corrected scale (:math:`\theta_1\bar\alpha_p`);
        without, the target drawn is the CTR divided by the true :math:`\theta_p/\theta_1`.
    relevance : click model or relevance map, optional
        A position-based click model with ``attractiveness`` (PBM, Cascade, ...)
        or a relevance map (``"graded"``, :class:`clickrank.clickmodels.Graded`, ...).
        With the log's ``label`` column it gives :math:`\bar\alpha_p`.
    intervention : str, optional
        Only sessions with this ``intervention`` (e.g. ``"none"``).
    relevant_label : float
        Without ``relevance`` and ``true_theta`` but with a ``label`` column, the
        share of documents with ``label >= relevant_label`` per position is drawn
        on a right-hand axis (its scale differs from the CTR's).
    alpha : float
        Intervals have level ``1 - alpha``.
    ax, path
        Axes to draw into; PNG file to write.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from statsmodels.stats.proportion import proportion_confint

    what = "ctr_by_position"
    alpha = check_alpha(alpha)
    lf = _filter_intervention(_lazy_log(log, ("position", "click"), what), intervention, what)
    has_label = "label" in lf.collect_schema()
    if relevance is not None and not has_label:
        raise InputError(f"{what}: relevance given but the log has no 'label' column")
    counts = clicklog.ctr_by_position(lf).collect()
    _empty_check(
        counts.height,
        what,
        "the log has no rows" + (f" with intervention {intervention!r}" if intervention else ""),
    )
    pos = counts["position"].to_numpy().astype(np.int64)
    n = counts["impressions"].to_numpy().astype(np.float64)
    c = counts["clicks"].to_numpy().astype(np.float64)
    ctr = c / n
    lo, hi = proportion_confint(c, n, alpha=alpha, method="wilson")
    z = norm.isf(alpha / 2)
    level = f"{100 * (1 - alpha):g}%"

    fig, ax, own = _new_axes(ax, (6.6, 4.3))
    ax.fill_between(pos, lo, hi, color="#d62728", alpha=0.2, lw=0)
    ax.plot(pos, ctr, "o-", color="#d62728", label="observed CTR")

    if propensities is not None:
        theta, se, method = _propensity_arrays(propensities, "propensities")
        ok = (pos <= theta.size) & np.isfinite(
            np.pad(theta, (0, max(0, pos.max() - theta.size)), constant_values=np.nan)[pos - 1]
        )
        if not ok.any():
            raise InputError(f"{what}: the propensities cover none of the logged positions")
        p = pos[ok]
        th, s = theta[p - 1], se[p - 1]
        ax.fill_between(
            p,
            lo[ok] / th * np.exp(-z * s),
            hi[ok] / th * np.exp(z * s),
            color="#1f77b4",
            alpha=0.2,
            lw=0,
        )
        ax.plot(p, ctr[ok] / th, "s-", color="#1f77b4", label=f"IPS-corrected CTR / θ̂ ({method})")

    t = None
    if true_theta is not None:
        t = np.asarray(true_theta, dtype=np.float64)
        if t.ndim != 1 or t.size < pos.max() or not np.all(t[: pos.max()] > 0):
            raise InputError(
                f"{what}: true_theta must hold a positive θ for each of the {pos.max()} positions"
            )
    twin = None
    if relevance is not None:
        f = _relevance_function(relevance)
        y = lf.select("position", "label").collect()
        a = f(y["label"].to_numpy().astype(np.float64)[:, None])[:, 0]
        per = (
            pl.DataFrame({"position": y["position"], "a": a})
            .group_by("position")
            .agg(pl.col("a").mean())
            .sort("position")
        )
        rp = per["position"].to_numpy().astype(np.int64)
        ra = per["a"].to_numpy()
        if t is not None and not np.isclose(t[0], 1.0):
            ra = t[0] * ra
            lab = "target θ₁ × mean P(click | examined)"
        else:
            lab = "true mean P(click | examined)"
        ax.plot(rp, ra, "k--", lw=1.6, label=lab)
    elif t is not None:
        rel_t = t[pos - 1] / t[0]
        ax.plot(pos, ctr / rel_t, "k--", lw=1.6, label="CTR / true θ (oracle correction)")
    elif has_label:
        share = (
            lf.group_by("position")
            .agg((pl.col("label") >= relevant_label).mean().alias("share"))
            .sort("position")
            .collect()
        )
        twin = ax.twinx()
        twin.plot(
            share["position"].to_numpy(),
            share["share"].to_numpy(),
            "k--",
            lw=1.4,
            label=f"share relevant (label ≥ {relevant_label:g}), right axis",
        )
        twin.set_ylabel(f"share of shown docs with label ≥ {relevant_label:g}")
        twin.set_ylim(0, max(1e-9, float(share["share"].max())) * 1.15)

    ax.set_xlabel("position (rank)")
    ax.set_ylabel("click-through rate (clicks / impressions)")
    ax.set_xticks(pos)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    sel = f"intervention = {intervention}; " if intervention else ""
    ax.set_title(
        f"Click-through rate by position\n({int(n[0]):,} impressions at position 1; "
        f"{sel}bands: {level} CI)",
        fontsize=10,
    )
    handles, labels = ax.get_legend_handles_labels()
    if twin is not None:
        h2, l2 = twin.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    ax.legend(handles, labels, fontsize=8, loc="upper right")
    return _finish(fig, path, own=own)


# -- 2. propensities vs truth ------------------------------------------------------------


def propensity_vs_truth(
    propensities: Any,
    true_theta: Any = None,
    *,
    alpha: float = 0.05,
    ax: Axes | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    r"""Estimated propensities with confidence bands against position (log y), truth overlaid.

    One :class:`~clickrank.propensity.Propensities` is drawn by its own
    :meth:`~clickrank.propensity.Propensities.plot`. Several (a sequence, or a
    mapping name -> Propensities) are overlaid for a comparison of methods,
    each with its ``1 - alpha`` band and slightly dodged along x so the bands
    stay readable; the true curve is drawn normalized like each estimate
    (:math:`\theta_p/\theta_1` for relative estimates).

    Parameters
    ----------
    propensities : Propensities, sequence or mapping of them
    true_theta : array, optional
        True examination probabilities (simulations).
    alpha : float
    ax, path
        Axes to draw into; PNG file to write.
    """
    from .propensity import Propensities

    alpha = check_alpha(alpha)
    if isinstance(propensities, Propensities):
        items = {propensities.method: propensities}
    elif isinstance(propensities, Mapping):
        items = dict(propensities)
    elif isinstance(propensities, Sequence) and not isinstance(propensities, str):
        items = {}
        for p in propensities:
            key = getattr(p, "method", str(len(items)))
            while key in items:
                key += "'"
            items[key] = p
    else:
        raise InputError(
            "propensities must be a Propensities, a sequence or a mapping of them, "
            f"got {type(propensities).__name__}"
        )
    _empty_check(len(items), "propensity_vs_truth", "no estimates given")
    for name, p in items.items():
        if not isinstance(p, Propensities):
            raise InputError(f"propensities[{name!r}] is a {type(p).__name__}, not Propensities")
    if true_theta is not None:
        t = np.asarray(true_theta, dtype=np.float64)
        if t.ndim != 1 or t.size == 0 or not np.all(t > 0):
            raise InputError("true_theta must be a 1-d array of positive probabilities")
    fig, ax, own = _new_axes(ax, (6.6, 4.3))
    if len(items) == 1:
        (p,) = items.values()
        p.plot(true_theta=true_theta, ax=ax, alpha=alpha)
        return _finish(fig, path, own=own)

    m = len(items)
    width = 0.3
    offsets = np.linspace(-width / 2, width / 2, m)
    level = f"{100 * (1 - alpha):g}%"
    k_max = 0
    for i, (name, p) in enumerate(items.items()):
        ok = p.identified
        x = p.positions[ok] + offsets[i]
        ci = p.conf_int(alpha)[ok]
        col = f"C{i}"
        ax.fill_between(x, ci[:, 0], ci[:, 1], color=col, alpha=0.15, lw=0)
        ax.errorbar(
            x,
            p.theta[ok],
            yerr=[p.theta[ok] - ci[:, 0], ci[:, 1] - p.theta[ok]],
            fmt="none",
            lw=1.0,
            capsize=2,
            color=col,
        )
        ax.plot(
            x,
            p.theta[ok],
            "o-",
            ms=3.5,
            lw=1.2,
            color=col,
            label=f"{name} ({p.n_sessions:,} sessions)",
        )
        k_max = max(k_max, p.K)
    if true_theta is not None:
        t = np.asarray(true_theta, dtype=np.float64)[:k_max]
        ax.plot(np.arange(1, t.size + 1), t / t[0], "k--", lw=1.5, label="true θ (θ₁ = 1)")
    ax.set_yscale("log")
    ax.set_xlabel("position (rank)")
    ax.set_ylabel("examination propensity θ (θ₁ = 1, log scale)")
    ax.set_xticks(np.arange(1, k_max + 1))
    ax.set_title(f"Position bias by estimator ({level} CI)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _finish(fig, path, own=own)


# -- 3. click heat map ----------------------------------------------------------------


def click_heatmap(
    log: pl.DataFrame | pl.LazyFrame,
    *,
    intervention: str | None = None,
    min_impressions: int = 30,
    ax: Axes | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    r"""CTR per (position, relevance label): a colour-coded, annotated grid.

    Each row is one label grade, each column a position; a cell is
    :math:`\mathrm{CTR}(p, y) = \text{clicks} / \text{impressions}`. Under the
    PBM every row is :math:`\alpha(y)\,\theta_p`: rows differ by a factor, and
    the fall along a row is the position bias alone, whatever the ranker.
    Cells with fewer than ``min_impressions`` impressions are left blank.

    Raises
    ------
    InputError
        If the log has no ``label`` column (only simulated logs have one).
    """
    what = "click_heatmap"
    min_impressions = check_positive(min_impressions, name="min_impressions", integer=True)
    lf = _filter_intervention(
        _lazy_log(log, ("position", "click", "label"), what), intervention, what
    )
    counts = clicklog.click_counts(
        lf.filter(pl.col("label").is_not_null()), ["position", "label"]
    ).collect()
    _empty_check(counts.height, what, "no labelled impressions")
    positions = np.unique(counts["position"].to_numpy()).astype(np.int64)
    labels = np.unique(counts["label"].to_numpy())
    pi = np.searchsorted(positions, counts["position"].to_numpy())
    li = np.searchsorted(labels, counts["label"].to_numpy())
    grid = np.full((labels.size, positions.size), np.nan)
    imp = np.zeros_like(grid)
    imp[li, pi] = counts["impressions"].to_numpy()
    grid[li, pi] = counts["ctr"].to_numpy()
    grid[imp < min_impressions] = np.nan

    fig, ax, own = _new_axes(ax, (1.0 + 0.62 * positions.size, 1.4 + 0.5 * labels.size))
    top = float(np.nanmax(grid)) if np.isfinite(grid).any() else 1.0
    im = ax.imshow(
        np.ma.masked_invalid(grid),
        origin="lower",
        aspect="auto",
        cmap="viridis",
        vmin=0.0,
        vmax=max(top, 1e-9),
    )
    cmap = im.get_cmap()
    norm_ = im.norm
    for i in range(labels.size):
        for j in range(positions.size):
            v = grid[i, j]
            if not np.isfinite(v):
                continue
            r, g, b, _ = to_rgba(cmap(norm_(v)))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            ax.text(
                j,
                i,
                f"{v:.2f}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if dark else "black",
            )
    ax.set_xticks(np.arange(positions.size), [str(p) for p in positions])
    ax.set_yticks(np.arange(labels.size), [f"{y:g}" for y in labels])
    ax.set_xlabel("position (rank)")
    ax.set_ylabel("true relevance label")
    total = int(imp.sum())
    ax.set_title(
        f"CTR by position and label ({total:,} impressions; blank: < "
        f"{min_impressions} impressions)",
        fontsize=9,
    )
    cb = fig.colorbar(im, ax=ax, pad=0.02)
    cb.set_label("click-through rate (clicks / impressions)")
    return _finish(fig, path, own=own)


# -- 4./5. learning and severity curves -------------------------------------------------


def _curves(
    frame: Any,
    x: str,
    what: str,
    ax: Axes | None,
    path: Any,
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool,
    reference: Sequence[str],
) -> Figure:
    df = _as_polars(frame, what)
    need = ["method", x, "mean", "lower", "upper"]
    missing = [c for c in need if c not in df.columns]
    if missing:
        raise InputError(f"{what}: the frame needs columns {need}; missing {missing}")
    _empty_check(df.height, what, "the frame has no rows")
    df = df.with_columns(
        pl.col("method").cast(pl.String),
        *[pl.col(c).cast(pl.Float64) for c in (x, "mean", "lower", "upper")],
    )
    bad = df.filter(pl.col("mean").is_null() | ~pl.col("mean").is_finite())
    if bad.height:
        raise InputError(
            f"{what}: 'mean' must be finite; method {bad['method'][0]!r} has {bad['mean'][0]!r}"
        )
    inverted = df.filter(pl.col("lower") > pl.col("upper"))
    if inverted.height:
        raise InputError(f"{what}: lower > upper for method {inverted['method'][0]!r}")
    if logx and df.filter(pl.col(x) <= 0).height:
        raise InputError(f"{what}: '{x}' must be > 0 (the x axis is logarithmic)")

    fig, ax, own = _new_axes(ax, (6.6, 4.3))
    methods = list(dict.fromkeys(df["method"].to_list()))
    refs = [
        m
        for m in methods
        if m.lower() in {r.lower() for r in reference}
        or df.filter(pl.col("method") == m)[x].null_count()
        == df.filter(pl.col("method") == m).height
    ]
    curves = [m for m in methods if m not in refs]
    _empty_check(len(curves) + len(refs), what, "no methods")
    for i, m in enumerate(curves):
        d = df.filter((pl.col("method") == m) & pl.col(x).is_not_null()).sort(x)
        xs = d[x].to_numpy()
        col = _color(m, i)
        ax.fill_between(
            xs, d["lower"].to_numpy(), d["upper"].to_numpy(), color=col, alpha=0.18, lw=0
        )
        ax.plot(xs, d["mean"].to_numpy(), "o-", ms=4, color=col, label=m)
    for i, m in enumerate(refs):
        d = df.filter(pl.col("method") == m)
        col = _color(m, len(curves) + i)
        mean = float(d["mean"].mean())
        ax.axhline(mean, color=col, ls="--", lw=1.4, label=f"{m} ({mean:.3f})")
        lo, hi = d["lower"].mean(), d["upper"].mean()
        if lo is not None and hi is not None and np.isfinite([lo, hi]).all():
            ax.axhspan(float(lo), float(hi), color=col, alpha=0.08, lw=0)
    if logx:
        ax.set_xscale("log")
    else:
        xs = np.unique(df[x].drop_nulls().to_numpy())
        if 0 < xs.size <= 12:
            ax.set_xticks(xs)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return _finish(fig, path, own=own)


def learning_curves(
    frame: Any,
    *,
    metric: str = "NDCG@10",
    reference: Sequence[str] = _REFERENCE_METHODS,
    level: float = 0.95,
    ax: Axes | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    r"""Test metric vs number of training sessions (log x) per training method, with CI bands.

    Parameters
    ----------
    frame : polars or pandas DataFrame (or dict of columns)
        One row per (method, training-set size) with columns

        ``method`` (str)
            e.g. ``naive``, ``ips``, ``skip-above``, ``oracle``.
        ``sessions`` (number > 0)
            click-log sessions the method was trained on.
        ``mean``, ``lower``, ``upper`` (float)
            the test metric and its confidence bounds (e.g. ``ci_low``/``ci_high``
            of :func:`clickrank.evaluation.evaluate`, or a t interval over seeds).

        Methods named in ``reference`` (default ``oracle``, ``production``,
        ``logging``), or whose ``sessions`` are all null, do not depend on the
        log size and are drawn as horizontal lines (mean of their rows) with a
        light band.
    metric : str
        Y-axis label, e.g. ``"NDCG@10"``.
    level : float
        Confidence level of the bounds, for the title.
    """
    return _curves(
        frame,
        "sessions",
        "learning_curves",
        ax,
        path,
        xlabel="training sessions in the click log (log scale)",
        ylabel=f"test {metric}",
        title=f"Learning curves ({100 * level:g}% CI bands)",
        logx=True,
        reference=reference,
    )


def severity_curves(
    frame: Any,
    *,
    metric: str = "NDCG@10",
    reference: Sequence[str] = _REFERENCE_METHODS,
    level: float = 0.95,
    ax: Axes | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    r"""Test metric vs position-bias severity :math:`\eta` (:math:`\theta_p = p^{-\eta}`).

    Same contract as :func:`learning_curves` with a column ``eta`` (float
    :math:`\ge 0`) instead of ``sessions``; a linear x axis.
    """
    return _curves(
        frame,
        "eta",
        "severity_curves",
        ax,
        path,
        xlabel="position-bias severity η  (θ_p = p^−η)",
        ylabel=f"test {metric}",
        title=f"Robustness to position bias ({100 * level:g}% CI bands)",
        logx=False,
        reference=reference,
    )


# -- 6. power curves -------------------------------------------------------------------


def power_curves(
    power_curve: Any,
    *,
    ax: Axes | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    """Power vs impressions per interleaving method and A/B metric.

    A thin wrapper of :meth:`clickrank.online.PowerCurve.plot` (result of
    :func:`clickrank.online.power_analysis`) that draws into a pyplot-free
    figure and writes the PNG atomically.
    """
    from .online import PowerCurve

    if not isinstance(power_curve, PowerCurve):
        raise InputError(
            f"power_curve must be a clickrank.online.PowerCurve, got {type(power_curve).__name__}"
        )
    _empty_check(len(power_curve.power) * len(power_curve.n), "power_curves", "empty curve")
    fig, ax, own = _new_axes(ax, (6.6, 4.3))
    power_curve.plot(ax=ax)
    return _finish(fig, path, own=own)


# -- 7. RankNet vs LambdaRank forces ---------------------------------------------------------


def forces(
    scores: Any = (2.5, 2.0, 1.5, 1.0, 0.5, 0.0),
    labels: Any = (0, 3, 1, 0, 2, 0),
    *,
    sigma: float = 1.0,
    normalize: bool = True,
    ax: Axes | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    r"""RankNet vs LambdaRank forces on the documents of one query, in ranked order.

    Forces :math:`\lambda_i` (positive = pushed up) from
    :func:`clickrank.lambdas.lambdas` with gains :math:`2^y - 1`:
    ``weighting="none"`` (RankNet, every misordered pair counts the same) and
    ``"ndcg"`` (LambdaRank, each pair scaled by :math:`|\Delta\mathrm{NDCG}_{ij}|`;
    Burges 2010 §4). The defaults are the DESIGN §4 example: RankNet pushes
    hardest on the label-2 document at rank 5, LambdaRank on the label-3
    document at rank 2, where a move changes NDCG most.

    Parameters
    ----------
    scores, labels : array ``[n]``
        One query: current scores and graded labels (the documents are drawn in
        the order of the scores, descending, ties by row order).
    sigma : float
        Logistic steepness.
    normalize : bool
        Divide each method's forces by its largest absolute force so both fit one
        axis (the raw values are printed on the bars); False draws raw forces.
    """
    from .lambdas import lambdas

    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if s.ndim != 1 or y.shape != s.shape or s.size < 2:
        raise InputError(
            f"forces: scores and labels must be 1-d of the same length >= 2, got "
            f"shapes {s.shape} and {y.shape}"
        )
    if not (np.isfinite(s).all() and np.isfinite(y).all()) or np.any(y < 0):
        raise InputError("forces: scores must be finite and labels finite and >= 0")
    if np.unique(y).size < 2:
        raise InputError("forces: all labels are equal, so no pair has a force")
    qptr = np.array([0, s.size])
    gains = 2.0**y - 1.0
    order = rank_order(s, qptr)
    f_rn = lambdas(s, gains, qptr, sigma=sigma, weighting="none").forces[order]
    f_lr = lambdas(s, gains, qptr, sigma=sigma, weighting="ndcg").forces[order]
    yr = y[order]

    fig, ax, own = _new_axes(ax, (max(6.0, 0.8 * s.size + 2), 4.3))
    x = np.arange(s.size)
    w = 0.38
    scale_rn = np.abs(f_rn).max() if normalize else 1.0
    scale_lr = np.abs(f_lr).max() if normalize else 1.0
    b1 = ax.bar(x - w / 2, f_rn / scale_rn, w, color="#7f7f7f", label="RankNet (all pairs equal)")
    b2 = ax.bar(
        x + w / 2, f_lr / scale_lr, w, color="#1f77b4", label="LambdaRank (pairs × |ΔNDCG|)"
    )
    if normalize:
        for bars, raw in ((b1, f_rn), (b2, f_lr)):
            for bar, v in zip(bars, raw, strict=True):
                h = bar.get_height()
                ax.annotate(
                    f"{v:+.3f}",
                    (bar.get_x() + bar.get_width() / 2, h),
                    xytext=(0, 2 if h >= 0 else -2),
                    textcoords="offset points",
                    ha="center",
                    va="bottom" if h >= 0 else "top",
                    fontsize=7,
                )
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(x, [f"rank {r + 1}\nlabel {v:g}" for r, v in enumerate(yr)])
    ax.set_xlabel("documents in the current ranking (by score)")
    ax.set_ylabel("force λᵢ / max |λ| (+ = push up)" if normalize else "force λᵢ (+ = push up)")
    if normalize:
        ax.set_ylim(-1.3, 1.65)
    ax.set_title(
        f"Forces on one query (σ = {sigma:g}; printed: raw λᵢ)"
        if normalize
        else f"Forces on one query (σ = {sigma:g})",
        fontsize=10,
    )
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", ncol=2)
    return _finish(fig, path, own=own)


# -- 8. skip-above bias ------------------------------------------------------------------


def skip_above_pairs(log: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Skip-above preference counts by (clicked position, skipped position), against the labels.

    The same pairs as :func:`clickrank.targets.skip_above` (a click at ``p``
    over each unclicked result above ``p``, Joachims et al. 2005 §5.3), kept
    by position and compared with the true labels of the two documents.

    Returns
    -------
    polars.DataFrame
        ``p_click``, ``p_skip`` (Int64), ``pairs``, ``agree`` (clicked label >
        skipped label), ``tie``, ``invert`` (clicked label < skipped label),
        sorted by positions.
    """
    lf = _lazy_log(log, ("session", "position", "click", "label"), "skip_above_bias")
    base = lf.select(
        "session",
        pl.col("position").cast(pl.Int64),
        pl.col("click").cast(pl.Boolean),
        pl.col("label").cast(pl.Float64),
    )
    clicked = base.filter(pl.col("click")).select(
        "session", pl.col("position").alias("p_click"), pl.col("label").alias("y_click")
    )
    skipped = base.filter(~pl.col("click")).select(
        "session", pl.col("position").alias("p_skip"), pl.col("label").alias("y_skip")
    )
    return (
        clicked.join(skipped, on="session", how="inner")
        .filter(pl.col("p_skip") < pl.col("p_click"))
        .group_by("p_click", "p_skip")
        .agg(
            pairs=pl.len(),
            agree=(pl.col("y_click") > pl.col("y_skip")).sum(),
            tie=(pl.col("y_click") == pl.col("y_skip")).sum(),
            invert=(pl.col("y_click") < pl.col("y_skip")).sum(),
        )
        .sort("p_click", "p_skip")
        .collect()
    )


def skip_above_bias(
    log: pl.DataFrame | pl.LazyFrame,
    *,
    kind: str = "matrix",
    min_pairs: int = 30,
    alpha: float = 0.05,
    ax: Axes | None = None,
    path: str | os.PathLike | None = None,
) -> Figure:
    r"""How often skip-above preferences contradict the true labels.

    Every preference "clicked at :math:`p` ≻ skipped at :math:`p' < p`" is
    compared with the labels of the two documents (simulated logs only):
    it *agrees* (clicked label higher), is a *tie*, or is *inverted* (the
    clicked document is less relevant than the one skipped). Inverted
    preferences come from clicks on non-relevant results and from relevant
    results above that were not examined; a pairwise learner fits them anyway.
    Every preference also contradicts the logged order by construction: with a
    deterministic logging ranker only the "lower over higher" direction of a
    pair is ever observed, so a learner fitted to the counts learns to reverse
    the logger (see ``docs/plots.md``).

    Parameters
    ----------
    kind : {"matrix", "distance"}
        ``"matrix"``: the share of inverted preferences among preferences with
        different labels, per (clicked position, skipped position), annotated.
        ``"distance"``: shares of agreeing, tied and inverted preferences
        (all pairs) against the distance :math:`p - p'`, with Wilson intervals.
    min_pairs : int
        Matrix cells with fewer untied preferences are left blank.

    Raises
    ------
    InputError
        If the log has no ``label`` column, or yields no preference.
    """
    from statsmodels.stats.proportion import proportion_confint

    what = "skip_above_bias"
    if kind not in ("matrix", "distance"):
        raise InputError(f"{what}: kind must be 'matrix' or 'distance', got {kind!r}")
    min_pairs = check_positive(min_pairs, name="min_pairs", integer=True)
    alpha = check_alpha(alpha)
    pairs = skip_above_pairs(log)
    _empty_check(pairs.height, what, "the log has no click below an unclicked result")
    total = int(pairs["pairs"].sum())

    if kind == "matrix":
        pc = pairs["p_click"].to_numpy()
        ps = pairs["p_skip"].to_numpy()
        k = int(pc.max())  # clicked positions 2..k (columns), skipped 1..k-1 (rows)
        informative = (pairs["agree"] + pairs["invert"]).to_numpy().astype(np.float64)
        grid = np.full((k - 1, k - 1), np.nan)
        counts = np.zeros((k - 1, k - 1))
        counts[ps - 1, pc - 2] = informative
        with np.errstate(invalid="ignore", divide="ignore"):
            grid[ps - 1, pc - 2] = pairs["invert"].to_numpy() / informative
        grid[counts < min_pairs] = np.nan
        fig, ax, own = _new_axes(ax, (2.2 + 0.55 * (k - 1), 1.3 + 0.5 * (k - 1)))
        # 0 = every preference right, 0.5 = a coin flip, 1 = every preference wrong
        im = ax.imshow(np.ma.masked_invalid(grid), origin="upper", cmap="RdYlGn_r", vmin=0, vmax=1)
        for i, j in zip(*np.nonzero(np.isfinite(grid)), strict=True):
            v = grid[i, j]
            r, g, b, _ = to_rgba(im.get_cmap()(im.norm(v)))
            dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.5
            ax.text(
                j,
                i,
                f"{100 * v:.0f}%",
                ha="center",
                va="center",
                fontsize=7.5,
                color="white" if dark else "black",
            )
        ax.set_xticks(np.arange(k - 1), [str(p) for p in range(2, k + 1)])
        ax.set_yticks(np.arange(k - 1), [str(p) for p in range(1, k)])
        ax.set_xlabel("position of the clicked result")
        ax.set_ylabel("position of the skipped result above it")
        share = float(pairs["invert"].sum()) / max(1.0, informative.sum())
        ax.set_title(
            f"Skip-above preferences contradicting the labels\n"
            f"(overall {100 * share:.1f}% of {int(informative.sum()):,} untied "
            f"preferences; blank: < {min_pairs})",
            fontsize=9,
        )
        cb = fig.colorbar(im, ax=ax, pad=0.02)
        cb.set_label("share inverted (0.5 = coin flip)")
        return _finish(fig, path, own=own)

    by_d = (
        pairs.with_columns(d=pl.col("p_click") - pl.col("p_skip"))
        .group_by("d")
        .agg(pl.col("pairs", "agree", "tie", "invert").sum())
        .sort("d")
    )
    d = by_d["d"].to_numpy()
    n = by_d["pairs"].to_numpy().astype(np.float64)
    fig, ax, own = _new_axes(ax, (6.6, 4.3))
    for col, color, lab in (
        ("agree", "#2ca02c", "agrees (clicked doc more relevant)"),
        ("tie", "#7f7f7f", "tie (same label)"),
        ("invert", "#d62728", "inverted (clicked doc less relevant)"),
    ):
        c = by_d[col].to_numpy().astype(np.float64)
        lo, hi = proportion_confint(c, n, alpha=alpha, method="wilson")
        ax.fill_between(d, lo, hi, color=color, alpha=0.2, lw=0)
        ax.plot(d, c / n, "o-", ms=4, color=color, label=lab)
    ax.set_xticks(d)
    ax.set_ylim(0, 1)
    ax.set_xlabel("distance between clicked and skipped result (positions)")
    ax.set_ylabel("share of skip-above preferences")
    ax.set_title(
        f"Skip-above preferences vs true labels ({total:,} preferences; {100 * (1 - alpha):g}% CI)",
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _finish(fig, path, own=own)
