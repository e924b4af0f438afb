"""Tests of clickrank.plots: each figure's plotted data, labels, PNG output and errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import polars as pl
import pytest
from matplotlib.figure import Figure
from polars.testing import assert_frame_equal

from clickrank import plots
from clickrank._core._io import LEDGER
from clickrank._core._validation import InputError
from clickrank.clicklog import ctr_by_position as ctr_table
from clickrank.clickmodels import PBM, Graded, PowerLaw
from clickrank.datasets import synthetic
from clickrank.lambdas import lambdas
from clickrank.online import PowerCurve
from clickrank.policies import DeterministicPolicy
from clickrank.propensity import estimate_propensities
from clickrank.simulation import Randomize, Swap, simulate

K = 8
PBM_MODEL = PBM(examination=PowerLaw(1.0))


@pytest.fixture(scope="module")
def data():
    return synthetic(80, 20, seed=3)


@pytest.fixture(scope="module")
def log(data):
    # a fixed, imperfect logging ranker: the true labels plus noise
    noisy = data.y + np.random.default_rng(0).normal(0, 1.5, data.n_docs)
    return simulate(
        data,
        policy=DeterministicPolicy(noisy),
        click_model=PBM_MODEL,
        n_sessions=30_000,
        interventions=[Swap(0.3), Randomize(0.2)],
        top_k=K,
        seed=7,
    )


@pytest.fixture(scope="module")
def swap_hat(log):
    return estimate_propensities(log, "swap")


def _finite_xy(line) -> np.ndarray:
    xy = np.asarray(line.get_xydata(), dtype=float)
    assert xy.size > 0
    assert np.isfinite(xy).all()
    return xy


def _labelled(ax) -> None:
    assert ax.get_xlabel().strip()
    assert ax.get_ylabel().strip()


def _line(ax, startswith: str):
    found = [ln for ln in ax.lines if ln.get_label().startswith(startswith)]
    assert found, f"no line labelled {startswith!r}: {[ln.get_label() for ln in ax.lines]}"
    return found[0]


# -- ctr_by_position -------------------------------------------------------------------


def test_ctr_by_position_draws_observed_and_corrected_ctr_from_the_log(log, swap_hat):
    fig = plots.ctr_by_position(log, swap_hat, PBM_MODEL.propensities(K), relevance=PBM_MODEL)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    _labelled(ax)
    table = ctr_table(log).collect()
    observed = _finite_xy(_line(ax, "observed"))
    np.testing.assert_array_equal(observed[:, 0], np.arange(1, K + 1))
    np.testing.assert_allclose(observed[:, 1], table["ctr"].to_numpy())
    corrected = _finite_xy(_line(ax, "IPS-corrected"))
    theta = swap_hat.theta / swap_hat.theta[0]
    np.testing.assert_allclose(corrected[:, 1], table["ctr"].to_numpy() / theta)
    assert len(ax.collections) >= 2  # CI bands
    for band in ax.collections:
        assert np.isfinite(np.concatenate([p.vertices for p in band.get_paths()])).all()


def test_ctr_by_position_relevance_curve_is_the_mean_attractiveness_per_position(log):
    fig = plots.ctr_by_position(log, relevance=PBM_MODEL)
    rel = _finite_xy(_line(fig.axes[0], "true mean"))
    a = Graded()(log["label"].to_numpy()[:, None])[:, 0]
    pos = log["position"].to_numpy().astype(int)
    expected = np.bincount(pos, weights=a)[1:] / np.bincount(pos)[1:]
    np.testing.assert_allclose(rel[:, 1], expected)


def test_ips_corrected_ctr_with_true_theta_recovers_relevance_within_4_se(log):
    """Under the PBM, CTR_p / theta_p estimates the mean attractiveness at p."""
    plain = log.filter(pl.col("intervention") == "none")
    theta = PBM_MODEL.propensities(K)
    fig = plots.ctr_by_position(plain, theta, relevance=PBM_MODEL)
    ax = fig.axes[0]
    corrected = _line(ax, "IPS-corrected").get_xydata()[:, 1]
    relevance = _line(ax, "true mean").get_xydata()[:, 1]
    table = ctr_table(plain).collect()
    se = table["se"].to_numpy() / theta
    assert np.all(np.abs(corrected - relevance) < 4 * se + 1e-12)
    # and the observed CTR is far below relevance beyond the first positions
    observed = _line(ax, "observed").get_xydata()[:, 1]
    assert np.all(observed[2:] < 0.5 * relevance[2:])


def test_ctr_by_position_without_relevance_shows_share_relevant_on_a_right_axis(log):
    fig = plots.ctr_by_position(log, relevant_label=2)
    assert len(fig.axes) == 2
    share = _finite_xy(fig.axes[1].lines[0])
    expected = (
        log.group_by("position")
        .agg((pl.col("label") >= 2).mean().alias("s"))
        .sort("position")["s"]
        .to_numpy()
    )
    np.testing.assert_allclose(share[:, 1], expected)
    assert fig.axes[1].get_ylabel()


def test_ctr_by_position_filters_an_intervention_and_rejects_bad_input(log):
    fig = plots.ctr_by_position(log, intervention="randomized")
    n = log.filter(pl.col("intervention") == "randomized").height
    assert f"{n // K:,} impressions" in fig.axes[0].get_title()
    with pytest.raises(InputError, match="nothing to plot"):
        plots.ctr_by_position(log, intervention="no-such-thing")
    with pytest.raises(InputError, match="polars"):
        plots.ctr_by_position({"position": [1], "click": [True]})
    with pytest.raises(InputError, match="label"):
        plots.ctr_by_position(log.drop("label"), relevance=PBM_MODEL)
    with pytest.raises(InputError, match="true_theta"):
        plots.ctr_by_position(log, true_theta=[1.0, 0.5])


# -- propensity_vs_truth ----------------------------------------------------------------


def test_propensity_vs_truth_single_estimate_reuses_its_plot(swap_hat):
    truth = PBM_MODEL.propensities(K)
    fig = plots.propensity_vs_truth(swap_hat, truth)
    ax = fig.axes[0]
    _labelled(ax)
    assert ax.get_yscale() == "log"
    est = _finite_xy(_line(ax, "estimate"))
    np.testing.assert_allclose(est[:, 1], swap_hat.theta)
    np.testing.assert_allclose(_finite_xy(_line(ax, "true"))[:, 1], truth / truth[0])


def test_propensity_vs_truth_overlays_several_methods(log, swap_hat):
    rand = estimate_propensities(log, "randomized")
    truth = PBM_MODEL.propensities(K)
    fig = plots.propensity_vs_truth({"swap": swap_hat, "randomized": rand}, truth)
    ax = fig.axes[0]
    _labelled(ax)
    for name, p in (("swap", swap_hat), ("randomized", rand)):
        line = _line(ax, name)
        np.testing.assert_allclose(_finite_xy(line)[:, 1], p.theta)
    assert len(ax.collections) >= 2
    with pytest.raises(InputError, match="not Propensities"):
        plots.propensity_vs_truth({"a": swap_hat, "b": [1.0, 0.5]})
    with pytest.raises(InputError, match="true_theta"):
        plots.propensity_vs_truth(swap_hat, [1.0, -0.5])


# -- click_heatmap ------------------------------------------------------------------------


def test_click_heatmap_cells_are_ctr_per_label_and_position(log):
    fig = plots.click_heatmap(log, min_impressions=1)
    ax = fig.axes[0]
    _labelled(ax)
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel()  # colour bar with a label
    grid = np.ma.filled(ax.images[0].get_array(), np.nan)
    labels = np.unique(log["label"].to_numpy())
    li = np.searchsorted(labels, log["label"].to_numpy())
    pi = log["position"].to_numpy().astype(int) - 1
    shown = np.zeros((labels.size, K))
    clicks = np.zeros((labels.size, K))
    np.add.at(shown, (li, pi), 1)
    np.add.at(clicks, (li, pi), log["click"].to_numpy())
    with np.errstate(invalid="ignore"):
        expected = clicks / np.where(shown > 0, shown, np.nan)
    np.testing.assert_allclose(grid, expected)
    assert len(ax.texts) == np.isfinite(expected).sum()


def test_click_heatmap_blanks_sparse_cells_and_needs_labels(log):
    counts = log.group_by("label", "position").len()
    threshold = int(counts["len"].median())
    grid = np.ma.filled(
        plots.click_heatmap(log, min_impressions=threshold).axes[0].images[0].get_array(), np.nan
    )
    assert np.isnan(grid).sum() == (counts["len"] < threshold).sum()
    with pytest.raises(InputError, match="label"):
        plots.click_heatmap(log.drop("label"))


# -- learning and severity curves ---------------------------------------------------------------


def _curve_frame(x: str, values) -> pl.DataFrame:
    rows = []
    for m, base in (("naive", 0.6), ("ips", 0.65), ("skip-above", 0.55)):
        for i, v in enumerate(values):
            mean = base + 0.02 * i
            rows.append(
                {"method": m, x: v, "mean": mean, "lower": mean - 0.01, "upper": mean + 0.01}
            )
    rows.append({"method": "oracle", x: None, "mean": 0.8, "lower": 0.79, "upper": 0.81})
    return pl.DataFrame(rows)


@pytest.mark.parametrize(
    ("fn", "x", "values", "scale"),
    [
        (plots.learning_curves, "sessions", [1_000, 10_000, 100_000], "log"),
        (plots.severity_curves, "eta", [0.0, 1.0, 2.0], "linear"),
    ],
)
def test_curves_draw_each_method_and_the_oracle_as_a_horizontal_line(fn, x, values, scale):
    frame = _curve_frame(x, values)
    fig = fn(frame)
    ax = fig.axes[0]
    _labelled(ax)
    assert ax.get_xscale() == scale
    for m, base in (("naive", 0.6), ("ips", 0.65), ("skip-above", 0.55)):
        xy = _finite_xy(_line(ax, m))
        np.testing.assert_allclose(xy[:, 0], values)
        np.testing.assert_allclose(xy[:, 1], base + 0.02 * np.arange(len(values)))
    oracle = _line(ax, "oracle")
    assert np.allclose(oracle.get_ydata(), 0.8)
    assert len(ax.collections) >= 3  # one CI band per method
    # the legend sits outside the axes, so it covers no band (the oracle's is at the top)
    renderer = fig.canvas.get_renderer()
    box = ax.get_legend().get_window_extent(renderer)
    assert box.x0 >= ax.get_window_extent(renderer).x1
    # the same frame from pandas gives the same lines
    fig2 = fn(pd.DataFrame(frame.to_dict(as_series=False)))
    for a, b in zip(ax.lines, fig2.axes[0].lines, strict=True):
        np.testing.assert_allclose(a.get_xydata(), b.get_xydata())


def test_curves_reject_frames_breaking_the_contract():
    frame = _curve_frame("sessions", [10, 100])
    with pytest.raises(InputError, match="missing"):
        plots.learning_curves(frame.drop("upper"))
    with pytest.raises(InputError, match="lower > upper"):
        plots.learning_curves(frame.with_columns(lower=pl.col("mean") + 1))
    with pytest.raises(InputError, match="> 0"):
        plots.learning_curves(frame.with_columns(sessions=pl.col("sessions") * 0))
    with pytest.raises(InputError, match="no rows"):
        plots.severity_curves(pd.DataFrame(columns=["method", "eta", "mean", "lower", "upper"]))
    with pytest.raises(InputError, match="DataFrame"):
        plots.learning_curves([1, 2, 3])


# -- power curves ------------------------------------------------------------------------------


def test_power_curves_wraps_power_curve_plot():
    n = np.array([10, 100, 1000])
    pc = PowerCurve(
        n=n,
        power={"team-draft": np.array([0.1, 0.6, 1.0]), "A/B clicks": np.array([0.05, 0.2, 0.9])},
        n_experiments=100,
        alpha=0.05,
        pool_size=1000,
        ndcg_a=0.8,
        ndcg_b=0.7,
        click_model="PBM",
    )
    fig = plots.power_curves(pc)
    ax = fig.axes[0]
    _labelled(ax)
    np.testing.assert_allclose(_finite_xy(_line(ax, "team-draft"))[:, 1], [0.1, 0.6, 1.0])
    with pytest.raises(InputError, match="PowerCurve"):
        plots.power_curves({"n": n})


# -- forces ------------------------------------------------------------------------------------


def test_forces_reproduce_the_design_example_in_ranked_order():
    fig = plots.forces()
    ax = fig.axes[0]
    _labelled(ax)
    heights = np.array([p.get_height() for p in ax.patches])
    assert heights.size == 12 and np.isfinite(heights).all()
    ranknet, lambdarank = heights[:6], heights[6:]
    design_rn = np.array([-2.234, 1.571, 0.182, -1.269, 2.429, -0.679])
    design_lr = np.array([-0.383, 0.286, -0.005, -0.052, 0.184, -0.031])
    np.testing.assert_allclose(ranknet, design_rn / np.abs(design_rn).max(), atol=1e-3)
    np.testing.assert_allclose(lambdarank, design_lr / np.abs(design_lr).max(), atol=1e-2)
    # one scale on the axis: no raw values printed on the bars, the legend gives each unit
    assert not ax.texts
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [
        f"RankNet (all pairs equal; 1 = {np.abs(design_rn).max():.3g})",
        f"LambdaRank (pairs × |ΔNDCG|; 1 = {np.abs(design_lr).max():.3g})",
    ]


def test_forces_order_documents_by_score_and_can_draw_raw_forces():
    scores = np.array([0.0, 2.0, 1.0])
    labels = np.array([2.0, 0.0, 1.0])
    fig = plots.forces(scores, labels, normalize=False)
    heights = np.array([p.get_height() for p in fig.axes[0].patches])
    f = lambdas(scores, 2.0**labels - 1, [0, 3], weighting="none").forces
    np.testing.assert_allclose(heights[:3], f[[1, 2, 0]])
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()][0] == "rank 1\nlabel 0"
    with pytest.raises(InputError, match="equal"):
        plots.forces([1.0, 0.0], [1, 1])
    with pytest.raises(InputError, match="same length"):
        plots.forces([1.0, 0.0], [1, 0, 2])


# -- skip-above bias -------------------------------------------------------------------------


def test_skip_above_pairs_is_the_click_log_aggregation(log):
    # the counting itself is tested in test_clicklog; plots only re-exports it
    from clickrank.clicklog import skip_above_pairs

    assert_frame_equal(plots.skip_above_pairs(log), skip_above_pairs(log))


def test_skip_above_bias_matrix_and_distance_views(log):
    fig = plots.skip_above_bias(log, min_pairs=1)
    ax = fig.axes[0]
    _labelled(ax)
    grid = np.ma.filled(ax.images[0].get_array(), np.nan)
    pairs = plots.skip_above_pairs(log)
    for r in pairs.iter_rows(named=True):
        untied = r["agree"] + r["invert"]
        if untied:
            assert math.isclose(grid[r["p_skip"] - 1, r["p_click"] - 2], r["invert"] / untied)
    assert np.isnan(grid[np.tril_indices(K - 1, -1)]).all()  # only skipped above clicked

    fig = plots.skip_above_bias(log, kind="distance")
    ax = fig.axes[0]
    _labelled(ax)
    shares = np.array([_finite_xy(ln)[:, 1] for ln in ax.lines])
    np.testing.assert_allclose(shares.sum(axis=0), 1.0)  # agree + tie + invert
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), np.arange(1, K))


def test_skip_above_bias_rejects_bad_input(log):
    with pytest.raises(InputError, match="label"):
        plots.skip_above_bias(log.drop("label"))
    with pytest.raises(InputError, match="kind"):
        plots.skip_above_bias(log, kind="pie")
    with pytest.raises(InputError, match="nothing to plot"):
        plots.skip_above_bias(log.with_columns(click=pl.lit(False)))


# -- shared behaviour: ax=, path= --------------------------------------------------------


def test_figures_draw_into_a_given_axes():
    host = Figure()
    ax = host.add_subplot()
    assert plots.forces(ax=ax) is host
    assert len(ax.patches) == 12


def test_png_is_written_atomically(tmp_path, log):
    out = tmp_path / "heat.png"
    plots.click_heatmap(log, path=out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir() if p.name != LEDGER] == ["heat.png"]
    assert out.stat().st_mode & 0o044  # readable by others, unlike a bare mkstemp file
    plots.forces(path=out)  # replaces the file
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(InputError, match="folder"):
        plots.forces(path=tmp_path / "missing" / "f.png")
    with pytest.raises(InputError, match="folder"):
        plots.forces(path=tmp_path)
