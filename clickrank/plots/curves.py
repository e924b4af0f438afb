"""Learning, severity and power curves: test metric or power against a size."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .._core._figures import finish, new_axes
from .._core._validation import InputError
from ._common import _REFERENCE_METHODS, _as_polars, _color, _empty_check


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

    fig, ax, own = new_axes(ax, (8.0, 4.3))
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
    # outside the axes, on the right: inside, "best" still covers a reference band
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return finish(fig, path, own=own)


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
    from ..online import PowerCurve

    if not isinstance(power_curve, PowerCurve):
        raise InputError(
            f"power_curve must be a clickrank.online.PowerCurve, got {type(power_curve).__name__}"
        )
    _empty_check(len(power_curve.power) * len(power_curve.n), "power_curves", "empty curve")
    fig, ax, own = new_axes(ax, (8.0, 4.3))
    power_curve.plot(ax=ax)
    return finish(fig, path, own=own)
