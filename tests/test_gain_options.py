"""Tests of the click statistics and the variance and candidate options of the gain targets."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from clickrank import InputError, RankingData
from clickrank.clickmodels import make_click_model
from clickrank.datasets import synthetic
from clickrank.lambdas import lambdas
from clickrank.policies import DeterministicPolicy
from clickrank.simulation import Swap, simulate
from clickrank.targets import (
    auto_candidates,
    auto_clip,
    click_stats,
    dr,
    ips,
    make_target,
    naive,
    never_shown_weight,
    relevance_model,
)

THETA = np.array([1.0, 0.6, 0.4, 0.3])


@pytest.fixture(scope="module")
def data() -> RankingData:
    return synthetic(40, 8, seed=11)


@pytest.fixture(scope="module")
def log(data) -> pl.DataFrame:
    """A top-4 log of a fixed ranking with swaps, so documents are seen at several positions."""
    cm = make_click_model(
        "pbm", examination=THETA, attractiveness={"kind": "binarized", "threshold": 2}
    )
    return simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=cm,
        n_sessions=3000,
        interventions=[Swap(0.3)],
        top_k=4,
        seed=4,
    )


def _row_of(data: RankingData, log: pl.DataFrame) -> np.ndarray:
    keys = pl.DataFrame(
        {"query": data.qid[data.query_index], "doc": data.doc, "row": np.arange(data.n_docs)}
    )
    return log.join(keys, on=["query", "doc"], how="left")["row"].to_numpy()


def test_click_stats_equal_a_numpy_reference(data, log):
    rows = _row_of(data, log)
    pos = log["position"].to_numpy().astype(int)
    c = log["click"].to_numpy().astype(float)
    s = click_stats(data, log, THETA)
    n = data.n_docs
    np.testing.assert_allclose(s.clicks, np.bincount(rows, weights=c, minlength=n))
    np.testing.assert_allclose(s.impressions, np.bincount(rows, minlength=n))
    np.testing.assert_allclose(s.exposure, np.bincount(rows, weights=THETA[pos - 1], minlength=n))
    np.testing.assert_allclose(s.ips, np.bincount(rows, weights=c / THETA[pos - 1], minlength=n))
    per_query = log.group_by("query").agg(pl.col("session").n_unique()).sort("query")
    want = dict(zip(per_query["query"].to_list(), per_query["session"].to_list(), strict=True))
    np.testing.assert_array_equal(s.sessions, [want.get(q, 0) for q in data.qid[data.query_index]])
    assert s.n_sessions == 3000 and s.shown_fraction == pytest.approx((s.impressions > 0).mean())


def test_clipped_statistics_equal_clipping_at_construction(data, log):
    s = click_stats(data, log, THETA)
    a, b = s.clipped(0.5), click_stats(data, log, THETA, clip=0.5)
    np.testing.assert_allclose(a.ips, b.ips)
    np.testing.assert_allclose(a.exposure, b.exposure)
    assert a.clip == b.clip == 0.5 and s.clipped(None) is s
    assert s.clipped("auto").clip == pytest.approx(auto_clip(3000))
    with pytest.raises(InputError, match="clip"):
        s.clipped(1.5)


def test_auto_clip_is_ten_over_root_n_capped_at_one():
    assert auto_clip(10_000) == pytest.approx(0.1)
    assert auto_clip(50) == 1.0
    with pytest.raises(InputError):
        auto_clip(0)


def test_exposure_normalisation_is_clicks_over_summed_propensities(data, log):
    s = click_stats(data, log, THETA)
    t = ips(data, log, THETA, clip=None, normalize="exposure", candidates="all")
    shown = s.impressions > 0
    np.testing.assert_allclose(
        t.gains[shown], s.sessions[shown] * s.clicks[shown] / s.exposure[shown]
    )
    assert np.all(t.gains[~shown] == 0)


def test_exposure_normalisation_recovers_relevance_under_pbm(data):
    """N_q C/E estimates N_q * P(click | examined): within 4 binomial SE of the truth."""
    cm = make_click_model(
        "pbm", examination=THETA, attractiveness={"kind": "binarized", "threshold": 2}
    )
    log = simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=cm,
        n_sessions=40_000,
        interventions=[Swap(0.5)],
        top_k=4,
        seed=9,
    )
    s = click_stats(data, log, THETA)
    t = ips(data, None, None, normalize="exposure", candidates="shown", stats=s)
    shown = s.impressions > 0
    gamma = np.where(data.y >= 2, 1.0, 0.1)
    est = t.gains[shown] / s.sessions[shown]
    rows, pos, _, n = s.cells  # Var C = sum over impressions of p (1 - p), p = theta * gamma
    p = THETA[pos - 1] * gamma[rows]
    var_c = np.bincount(rows, weights=n * p * (1 - p), minlength=data.n_docs)
    se = np.sqrt(var_c[shown]) / s.exposure[shown]
    z = np.abs(est - gamma[shown]) / se
    assert np.all(z < 4.5), z.max()  # 4.5 SE over ~300 documents: a false alarm is rare


def test_hybrid_candidates_floor_and_weights(data, log):
    s = click_stats(data, log, THETA)
    t = ips(data, None, None, candidates="hybrid", stats=s)
    shown = s.impressions > 0
    q = data.query_index
    assert t.candidates is None and (~shown).any()
    for query in range(data.n_queries):  # a handful of queries: a direct reference
        m = q == query
        floor = s.ips[m & shown].min()
        np.testing.assert_allclose(t.gains[m & ~shown], floor)
        np.testing.assert_allclose(t.gains[m & shown], s.ips[m & shown])
        share = (~shown[m]).mean()
        np.testing.assert_allclose(t.doc_weights[m & ~shown], share)
        np.testing.assert_allclose(t.doc_weights[m & shown], 1.0)
    np.testing.assert_allclose(never_shown_weight(s), 1 - 4 / data.lengths)
    fixed = ips(data, None, None, candidates="hybrid", hybrid_weight=0.25, stats=s)
    np.testing.assert_allclose(fixed.doc_weights[~shown], 0.25)


def test_auto_candidates_follow_the_shown_fraction(data, log):
    s = click_stats(data, log, THETA)  # top 4 of 8: half of the documents shown
    assert auto_candidates(s) == "shown"
    t = naive(data, log)
    assert t.metadata["candidates"] == "shown" and "auto" in t.metadata["candidates_rule"]
    long = synthetic(30, 60, seed=2)  # top 4 of 60: under 20% shown
    cm = make_click_model("pbm", examination=THETA, attractiveness="graded")
    long_log = simulate(
        long,
        policy=DeterministicPolicy(long.X[:, 0]),
        click_model=cm,
        n_sessions=500,
        top_k=4,
        seed=1,
    )
    t_long = naive(long, long_log)
    assert t_long.metadata["candidates"] == "hybrid" and t_long.doc_weights is not None


def test_doc_weights_scale_pairs_and_zero_weight_silences_a_document():
    s = np.array([2.0, 1.0, 0.5, 0.0])
    g = np.array([0.0, 3.0, 1.0, 0.0])
    qptr = np.array([0, 4])
    base = lambdas(s, g, qptr)
    np.testing.assert_allclose(
        lambdas(s, g, qptr, doc_weights=np.full(4, 2.0)).forces, 4 * base.forces
    )
    w = np.array([1.0, 1.0, 1.0, 0.0])
    f = lambdas(s, g, qptr, doc_weights=w).forces
    assert f[3] == 0 and abs(f.sum()) < 1e-12
    # pairs without document 3 are unchanged: the force on document 2 loses only its pair with 3
    manual = lambdas(s[:3], g[:3], np.array([0, 3])).forces
    np.testing.assert_allclose(f[1], manual[1], rtol=1e-12)
    with pytest.raises(InputError, match="doc_weights"):
        lambdas(s, g, qptr, doc_weights=-w)


def test_dr_gains_follow_their_formula(data, log):
    s = click_stats(data, log, THETA)
    r = np.linspace(0.05, 0.9, data.n_docs)
    t = dr(data, None, None, relevance=r, clip=None, stats=s)
    shown = s.impressions > 0
    n_q = s.sessions
    # no clipping: the per-exposure rate for shown documents, the model for the others
    want = np.where(shown, s.clicks / np.where(shown, s.exposure, 1), r) * n_q
    np.testing.assert_allclose(t.gains, np.maximum(want, 0), atol=1e-9)
    tau = 0.5
    clipped = dr(data, None, None, relevance=r, clip=tau, stats=s)
    rho = s.exposure / n_q
    gamma = r + (s.clicks / n_q - rho * r) / np.maximum(rho, tau)
    np.testing.assert_allclose(clipped.gains, np.maximum(gamma, 0) * n_q, atol=1e-9)
    assert t.candidates is None


def test_relevance_model_is_cross_fitted(data, log):
    """A fold's predictions do not change when that fold's clicks change."""
    s = click_stats(data, log, THETA)
    r = relevance_model(data, s, folds=4, seed=3)
    assert r.shape == (data.n_docs,) and np.all((r >= 0) & (r <= 1))
    fold = np.random.default_rng(3).permutation(data.n_queries) % 4
    held = fold[data.query_index] == 0
    from dataclasses import replace

    changed = replace(s, clicks=np.where(held, 0.0, s.clicks))
    r2 = relevance_model(data, changed, folds=4, seed=3)
    np.testing.assert_array_equal(r2[held], r[held])
    assert not np.array_equal(r2[~held], r[~held])


def test_make_target_names_and_errors(data, log):
    assert make_target("oracle", data).name == "oracle"
    assert make_target("ips", data, log, THETA).name == "ips"
    assert make_target("pairs:skip-next", data, log).kind == "pairs"
    with pytest.raises(InputError, match="needs propensities"):
        make_target("dr", data, log)
    with pytest.raises(InputError, match="unknown target"):
        make_target("ipss", data, log, THETA)
    with pytest.raises(InputError, match="needs a click log"):
        make_target("naive", data)
