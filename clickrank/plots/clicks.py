"""Figures drawn from a click log: CTR by position, the click heat map, skip-above bias.

The statistics come from :mod:`clickrank.clicklog`; these functions only draw.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from scipy.stats import norm

from .. import clicklog
from .._core._figures import finish, new_axes
from .._core._validation import InputError, check_alpha, check_positive
from ._common import _empty_check, _propensity_arrays, _relevance_function


def _draw_corrected_ctr(ax, propensities, pos, ctr, lo, hi, z: float, what: str) -> None:
    """CTR / θ̂ with the Wilson bounds widened by the propensity's interval (log scale)."""
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


def _check_true_theta(true_theta: Any, k: int, what: str) -> np.ndarray:
    t = np.asarray(true_theta, dtype=np.float64)
    if t.ndim != 1 or t.size < k or not np.all(t[:k] > 0):
        raise InputError(f"{what}: true_theta must hold a positive θ for each of the {k} positions")
    return t


def _draw_relevance(ax, per: pl.DataFrame, t: np.ndarray | None) -> None:
    """Mean P(click | examined) per position (times θ₁ when the truth is not relative)."""
    rp = per["position"].to_numpy().astype(np.int64)
    ra = per["mean_value"].to_numpy()
    if t is not None and not np.isclose(t[0], 1.0):
        ra = t[0] * ra
        lab = "target θ₁ × mean P(click | examined)"
    else:
        lab = "true mean P(click | examined)"
    ax.plot(rp, ra, "k--", lw=1.6, label=lab)


def _draw_share_relevant(ax, share: pl.DataFrame, relevant_label: float):
    """The share of relevant shown documents per position, on a right-hand axis."""
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
    return twin


def _ctr_counts(
    log: pl.DataFrame | pl.LazyFrame, relevance: Any, intervention: str | None, what: str
) -> tuple[pl.LazyFrame, bool, np.ndarray, np.ndarray, np.ndarray]:
    """Selected log, label flag, impressions and clicks by position: the plot's reading step."""
    lf = clicklog.select_intervention(
        clicklog.lazy_log(log, ("position", "click"), what), intervention, what
    )
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
    return lf, has_label, pos, n, c


def _draw_reference(
    ax: Axes,
    lf: pl.LazyFrame,
    relevance: Any,
    t: np.ndarray | None,
    pos: np.ndarray,
    ctr: np.ndarray,
    has_label: bool,
    relevant_label: float,
) -> Axes | None:
    """Draw relevance, the oracle or the relevant share (its axis returned): a step of the plot."""
    twin = None
    if relevance is not None:
        _draw_relevance(ax, clicklog.mean_by_position(lf, _relevance_function(relevance)), t)
    elif t is not None:
        rel_t = t[pos - 1] / t[0]
        ax.plot(pos, ctr / rel_t, "k--", lw=1.6, label="CTR / true θ (oracle correction)")
    elif has_label:
        twin = _draw_share_relevant(
            ax, clicklog.share_at_least_by_position(lf, relevant_label), relevant_label
        )
    return twin


def _decorate_ctr(
    ax: Axes,
    twin: Axes | None,
    pos: np.ndarray,
    n: np.ndarray,
    intervention: str | None,
    level: str,
) -> None:
    """Labels, title and legend of :func:`ctr_by_position`: its last step, after the curves."""
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
    Joachims et al. (2017), Eq. 5) gives :math:`\mathrm{CTR}_p / \hat\theta_p
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
    lf, has_label, pos, n, c = _ctr_counts(log, relevance, intervention, what)
    ctr = c / n
    lo, hi = proportion_confint(c, n, alpha=alpha, method="wilson")
    level = f"{100 * (1 - alpha):g}%"

    fig, ax, own = new_axes(ax, (6.6, 4.3))
    ax.fill_between(pos, lo, hi, color="#d62728", alpha=0.2, lw=0)
    ax.plot(pos, ctr, "o-", color="#d62728", label="observed CTR")

    if propensities is not None:
        _draw_corrected_ctr(ax, propensities, pos, ctr, lo, hi, norm.isf(alpha / 2), what)
    t = None if true_theta is None else _check_true_theta(true_theta, int(pos.max()), what)
    twin = _draw_reference(ax, lf, relevance, t, pos, ctr, has_label, relevant_label)

    _decorate_ctr(ax, twin, pos, n, intervention, level)
    return finish(fig, path, own=own)


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
    lf = clicklog.select_intervention(
        clicklog.lazy_log(log, ("position", "click", "label"), what), intervention, what
    )
    counts = clicklog.ctr_by_position_and_label(lf).collect()
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

    fig, ax, own = new_axes(ax, (1.0 + 0.62 * positions.size, 1.4 + 0.5 * labels.size))
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
    return finish(fig, path, own=own)


# -- 8. skip-above bias ------------------------------------------------------------------


def skip_above_pairs(log: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Skip-above preference counts against the labels: :func:`clickrank.clicklog.skip_above_pairs`.

    Kept here for compatibility; the aggregation lives in :mod:`clickrank.clicklog`.
    """
    return clicklog.skip_above_pairs(log, "skip_above_bias")


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

    what = "skip_above_bias"
    if kind not in ("matrix", "distance"):
        raise InputError(f"{what}: kind must be 'matrix' or 'distance', got {kind!r}")
    min_pairs = check_positive(min_pairs, name="min_pairs", integer=True)
    alpha = check_alpha(alpha)
    pairs = clicklog.skip_above_pairs(log, what)
    _empty_check(pairs.height, what, "the log has no click below an unclicked result")
    total = int(pairs["pairs"].sum())

    if kind == "matrix":
        return _skip_matrix(pairs, min_pairs, ax, path)
    return _skip_distance(pairs, total, alpha, ax, path)


def _skip_matrix(pairs: pl.DataFrame, min_pairs: int, ax, path) -> Figure:
    """Share of inverted preferences per (clicked, skipped) position, annotated."""
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
    fig, ax, own = new_axes(ax, (2.2 + 0.55 * (k - 1), 1.3 + 0.5 * (k - 1)))
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
    return finish(fig, path, own=own)


def _skip_distance(pairs: pl.DataFrame, total: int, alpha: float, ax, path) -> Figure:
    """Shares of agreeing, tied and inverted preferences against the distance, Wilson CIs."""
    from statsmodels.stats.proportion import proportion_confint

    by_d = clicklog.skip_above_by_distance(pairs)
    d = by_d["d"].to_numpy()
    n = by_d["pairs"].to_numpy().astype(np.float64)
    fig, ax, own = new_axes(ax, (6.6, 4.3))
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
    return finish(fig, path, own=own)
