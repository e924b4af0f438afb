"""Tests of clickrank.propensity: recovery of known θ, interval coverage, flags and IO.

Recovery tests use *simultaneous* intervals: with K - 1 estimated positions,
each position is checked at level 1 - 0.01/(K - 1) (Bonferroni), so the
whole curve is inside its intervals with probability >= 99% when the
intervals are right.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from scipy.stats import norm

from clickrank import EstimationError, InputError, LogSchemaError
from clickrank.clickmodels import make_click_model, power_law
from clickrank.datasets import synthetic
from clickrank.policies import DeterministicPolicy, MixturePolicy
from clickrank.propensity import (
    METHODS,
    Propensities,
    bootstrap,
    em,
    em_from_cells,
    estimate_propensities,
    harvest,
    randomized,
    randpair,
    swap,
)
from clickrank.propensity._swap import pair_from_counts
from clickrank.simulation import Randomize, RandPair, Swap, simulate

K = 10
ALPHA_FAMILY = 0.01
ALPHA_EACH = ALPHA_FAMILY / (K - 1)


@pytest.fixture(scope="module")
def data():
    return synthetic(30, 10, seed=0)


def _true(eta: float, k: int = K) -> np.ndarray:
    t = power_law(k, eta)
    return t / t[0]


def _covered(result: Propensities, truth: np.ndarray, alpha: float = ALPHA_EACH) -> np.ndarray:
    ci = result.conf_int(alpha).select("lower", "upper").to_numpy()
    return (ci[:, 0] <= truth) & (truth <= ci[:, 1])


@pytest.fixture(scope="module", params=[0.5, 1.0, 2.0], ids=lambda e: f"eta{e}")
def intervention_log(request, data):
    eta = request.param
    log = simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=make_click_model("pbm", eta=eta),
        n_sessions=120_000,
        interventions=[Swap(0.35), RandPair(0.35), Randomize(0.2)],
        seed=11,
    )
    return eta, log


@pytest.fixture(scope="module", params=[0.5, 1.0, 2.0], ids=lambda e: f"eta{e}")
def harvest_log(request, data):
    eta = request.param
    mix = MixturePolicy([DeterministicPolicy(data.X[:, j], name=f"r{j}") for j in range(3)])
    log = simulate(
        data, policy=mix, click_model=make_click_model("pbm", eta=eta), n_sessions=80_000, seed=21
    )
    return eta, log


@pytest.fixture(scope="module")
def one_log(data):
    """A single intervention log (eta = 1) for the tests of the result object and CLI."""
    return simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=60_000,
        interventions=[Swap(0.35), RandPair(0.35), Randomize(0.2)],
        seed=12,
    )


@pytest.mark.parametrize("estimator", [swap, randpair, randomized], ids=lambda f: f.__name__)
def test_intervention_estimators_recover_theta_within_their_intervals(estimator, intervention_log):
    eta, log = intervention_log
    result = estimator(log)
    truth = _true(eta)
    assert result.K == K and result.theta[0] == 1.0
    assert np.all(np.isfinite(result.theta)) and not result.warnings
    assert _covered(result, truth).all(), result.summary()


@pytest.mark.parametrize("method", ["harvest-pivot", "harvest-adjacent", "harvest-allpairs"])
def test_harvesting_recovers_theta_from_several_rankers_without_randomization(method, harvest_log):
    eta, log = harvest_log
    assert log["intervention"].cast(pl.String).unique().to_list() == ["none"]
    assert log["ranker"].n_unique() == 3
    result = estimate_propensities(log, method=method)
    assert np.all(np.isfinite(result.se[1:])) and np.all(result.se[1:] > 0)
    assert _covered(result, _true(eta)).all(), result.summary()


def test_em_recovers_theta_on_an_identified_log(harvest_log):
    eta, log = harvest_log
    result = em(log, n_boot=25, seed=3)
    assert result.info["converged"]
    assert result.replicates.shape == (25, K)
    assert _covered(result, _true(eta)).all(), result.summary()


def _boundary_cells(rng, n_boundary: int, n: int = 200) -> dict:
    """PBM cells, theta = (1, 1/2, 1/4): 20 pairs with gamma 0.6 at positions 1-3, and
    ``n_boundary`` pairs with gamma 1 (click probability 1 at position 1) shown only at 2-3."""
    theta = np.array([1.0, 0.5, 0.25])
    g = np.r_[np.repeat(np.arange(20), 3), 20 + np.repeat(np.arange(n_boundary), 2)]
    pos = np.r_[np.tile([1, 2, 3], 20), np.tile([2, 3], n_boundary)]
    gamma = np.where(g < 20, 0.6, 1.0)
    c = rng.binomial(n, theta[pos - 1] * gamma).astype(float)
    return {"g": g, "position": pos, "n": np.full(g.size, float(n)), "c": c,
            "n_sessions": 3.0 * n}  # fmt: skip


def test_em_is_unbiased_when_the_truth_is_on_the_counterfactual_boundary():
    # Pairs with gamma = 1 seen only below position 1: EM (gamma <= 1 everywhere) truncates
    # their gamma and raises theta_2, theta_3; the default bounds only the observed cells.
    rng = np.random.default_rng(0)
    reps = 120
    err = {"observed": np.zeros((reps, 2)), "all": np.zeros((reps, 2))}
    for r in range(reps):
        cells = _boundary_cells(rng, 5)
        for constraint, e in err.items():
            fit = em_from_cells(cells, constraint=constraint)
            assert fit.info["converged"]
            e[r] = np.log(fit.theta[1:]) - np.log([0.5, 0.25])
    for constraint, e in err.items():
        se = e.std(axis=0, ddof=1) / np.sqrt(reps)  # of the mean error over the logs
        if constraint == "observed":
            assert np.all(np.abs(e.mean(axis=0)) < 3 * se), (e.mean(axis=0), se)
        else:  # EM's bias (about 0.7 SD of one log at position 2) is detectable
            assert e.mean(axis=0)[0] > 3 * se[0], (e.mean(axis=0), se)


def test_em_constraints_agree_where_the_boundary_is_not_reached():
    # Away from the counterfactual bound both maximize the same likelihood: Newton
    # (default) and EM find the same maximum. A pair clicked at every impression at
    # position 1 (c = n, its bound active) is included.
    rng = np.random.default_rng(1)
    cells = _boundary_cells(rng, 0, n=400)
    cells = {
        k: (np.r_[v, [20, 20, 20]] if k == "g" else np.r_[v, [1, 2, 3]] if k == "position"
            else np.r_[v, [400.0, 400.0, 400.0]] if k == "n" else v)
        for k, v in cells.items()
    }  # fmt: skip
    cells["c"] = np.r_[cells["c"], 400.0, rng.binomial(400, 0.5), rng.binomial(400, 0.25)]
    new = em_from_cells(cells)
    old = em_from_cells(cells, constraint="all", tol=1e-12)
    assert new.info["converged"] and new.info["constraint"] == "observed"
    np.testing.assert_allclose(np.log(new.theta), np.log(old.theta), atol=1e-7)
    with pytest.raises(InputError, match="constraint must be one of"):
        em_from_cells(cells, constraint="none")


def test_allpairs_is_more_precise_than_the_adjacent_chain(harvest_log):
    _, log = harvest_log
    chain = harvest(log, estimator="adjacent")
    allp = harvest(log, estimator="allpairs")
    # AllPairs uses every interventional set, the chain only neighbours: at the far end
    # the chain accumulates the variance of 9 ratios.
    assert allp.se[-1] < chain.se[-1]


def _tiny_cells(seed: int = 4, heavy: bool = False) -> dict:
    """Cell statistics of 8 (query, doc) pairs over positions 1-3, every link with >= 4 pairs.

    ``heavy``: pair 0 has 30 times the impressions and clicks (it dominates its sets).
    """
    shown = [(1, 2, 3), (1, 2), (2, 3), (1, 2, 3), (1, 2), (2, 3), (1, 3), (1, 2, 3)]
    rng = np.random.default_rng(seed)
    g = np.concatenate([np.full(len(p), i) for i, p in enumerate(shown)])
    pos = np.concatenate([np.array(p) for p in shown])
    n = rng.integers(20, 60, g.size).astype(float)
    c = np.maximum(1, rng.binomial(n.astype(int), 0.5 / pos)).astype(float)
    if heavy:
        n[g == 0] *= 30
        c[g == 0] *= 30
    return {"g": g, "position": pos, "n": n, "c": c, "n_sessions": 200.0}


def test_pivot_se_is_the_delete_one_pair_jackknife_by_refitting():
    from clickrank.propensity._harvest import harvest_from_cells

    cells = _tiny_cells()
    est = harvest_from_cells(cells, estimator="pivot", K=3)
    drops = []
    for g in (0, 1, 3, 4, 6, 7):  # refit without pair g (2 and 5 are in no pivot set)
        keep = cells["g"] != g
        sub = {k: v[keep] if k != "n_sessions" else v for k, v in cells.items()}
        sub["g"] = np.unique(sub["g"], return_inverse=True)[1]
        drops.append(np.log(harvest_from_cells(sub, estimator="pivot", K=3).theta))
    d = np.array(drops) - np.log(est.theta)
    var = 5 / 6 * ((d - d.mean(axis=0)) ** 2).sum(axis=0)
    np.testing.assert_allclose(est.se[1:], np.sqrt(var[1:]), rtol=1e-10)
    np.testing.assert_array_equal(est.df, [np.inf, 4, 3])  # G - 1: 5 and 4 pairs


@pytest.mark.parametrize("chunk", [None, 16], ids=["at-once", "16-clusters-at-a-time"])
def test_allpairs_leave_one_out_equals_the_dense_solve_per_cluster(monkeypatch, chunk):
    """The Schur route of the AllPairs jackknife gives the theta part of the full
    (H - H_g + ridge I)^-1 u_g, also for a cluster that holds a pair's only weight, and
    in chunks of clusters."""
    from clickrank.propensity import _harvest

    if chunk is not None:  # the cross block is clusters x 4 theta columns x 7 pairs
        monkeypatch.setattr(_harvest, "JACKKNIFE_CHUNK", chunk * 4 * 7)

    rng = np.random.default_rng(3)
    n_free, P, G, rows = 4, 7, 40, 300
    g = rng.integers(0, G, rows)
    t = rng.integers(-1, n_free, rows)  # -1: a side at position 1 (no theta column)
    pair = rng.integers(0, P - 1, rows)
    g[-1], t[-1], pair[-1] = 5, 2, P - 1  # pair P - 1 is seen by cluster 5 alone
    w = rng.uniform(0.1, 2.0, rows)
    n_par = n_free + P
    Hg = np.zeros((G, n_par, n_par))
    for gi, ti, pi, wi in zip(g, t, pair, w, strict=True):
        v = np.zeros(n_par)
        v[n_free + pi] = 1.0
        if ti >= 0:
            v[ti] = 1.0
        Hg[gi] += wi * np.outer(v, v)
    H = Hg.sum(axis=0)
    U = rng.normal(size=(G, n_par))
    ridge = 1e-9 * np.max(np.diag(H))
    dense = np.linalg.solve(H[None] - Hg + ridge * np.eye(n_par), U[:, :, None])[:, :, 0]
    half = rows // 2
    sides = [
        (g[:half], t[:half], pair[:half], w[:half]),
        (g[half:], t[half:], pair[half:], w[half:]),
    ]
    D = _harvest._leave_one_out(sides, H, ridge, U, n_free)
    np.testing.assert_allclose(D, dense[:, :n_free], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("heavy", [False, True], ids=["even", "one-heavy-pair"])
def test_adjacent_se_and_df_are_cr2_over_the_pairs_of_the_chain(heavy):
    from clickrank.propensity._harvest import harvest_from_cells

    cells = _tiny_cells(heavy=heavy)
    est = harvest_from_cells(cells, estimator="adjacent", K=3)
    g, pos, n, c = cells["g"], cells["position"], cells["n"], cells["c"]

    def cell(i, k):
        j = np.flatnonzero((g == i) & (pos == k))
        return (n[j[0]], c[j[0]] / n[j[0]]) if j.size else None

    # per-pair influence on log theta_2, log theta_3, summed over the links before squaring
    # (pairs 0, 3, 7 are in both links: their cross terms are the links' covariance)
    D = np.zeros((8, 3))
    theta = [1.0]
    for lo, hi in ((1, 2), (2, 3)):
        members = [i for i in range(8) if cell(i, lo) and cell(i, hi)]
        w = {
            i: cell(i, lo)[0] * cell(i, hi)[0] / (cell(i, lo)[0] + cell(i, hi)[0]) for i in members
        }
        a = sum(w[i] * cell(i, lo)[1] for i in members)
        b = sum(w[i] * cell(i, hi)[1] for i in members)
        theta.append(theta[-1] * b / a)
        D[:, hi - 1] = D[:, lo - 1]
        for i in members:
            ag, bg = w[i] * cell(i, lo)[1], w[i] * cell(i, hi)[1]
            D[i, hi - 1] += (bg / b - ag / a) / np.sqrt(1 - (ag / a + bg / b) / 2)
    np.testing.assert_allclose(est.theta, theta, rtol=1e-12)
    var = (D**2).sum(axis=0)
    np.testing.assert_allclose(est.se[1:], np.sqrt(var[1:]), rtol=1e-10)
    # pairs in the chain to 2: 0, 1, 3, 4, 7; to 3: those and 2, 5
    df = np.clip(3 * var[1:] ** 2 / (D[:, 1:] ** 4).sum(axis=0), 1, [4, 6])
    np.testing.assert_allclose(est.df[1:], df, rtol=1e-10)
    assert np.all(df < [4, 6]) if heavy else np.all(df == [4, 6])  # effective < G - 1


def test_randomized_interval_matches_the_session_level_delta_method(data):
    log = simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=3000,
        interventions=[Randomize(1.0)],
        seed=5,
    )
    result = randomized(log)
    # brute force on the dense [sessions, positions] click matrix
    C = (log.sort("session", "position")["click"].to_numpy().reshape(-1, K)).astype(float)
    n = C.shape[0]
    m = C.mean(axis=0)
    cov = np.cov(C, rowvar=False, bias=True)
    var = (cov.diagonal() / m**2 + cov[0, 0] / m[0] ** 2 - 2 * cov[:, 0] / (m * m[0])) / n
    np.testing.assert_allclose(result.theta, m / m[0], rtol=1e-12)
    np.testing.assert_allclose(result.se[1:], np.sqrt(var[1:]), rtol=1e-9)


@pytest.mark.slow
def test_swap_95_intervals_cover_theta_in_93_to_97_percent_of_2000_logs(data):
    """2000 independent simulated logs of 2000 sessions (top 5, half of them swapped).

    The coverage of each position is a binomial proportion over 2000 logs with
    SE sqrt(.95 * .05 / 2000) = 0.49%, so 93-97% is about ±4 SE around 95%.
    """
    n_logs, per_log, top_k = 2000, 2000, 5
    model = make_click_model("pbm", eta=1.0)
    frames = []
    for start in range(0, n_logs * per_log, 500_000):  # chunks of 250 logs, aggregated at once
        chunk = simulate(
            data,
            policy=DeterministicPolicy(data.X[:, 0]),
            click_model=model,
            n_sessions=500_000,
            first_session=start,
            top_k=top_k,
            interventions=[Swap(0.5)],
            seed=7,
        )
        frames.append(
            chunk.with_columns(rep=(pl.col("session") // per_log).cast(pl.Int64))
            .group_by("rep", "intervention", "swap_pivot", "swap_k", "position")
            .agg(n=pl.len().cast(pl.Float64), c=pl.col("click").sum().cast(pl.Float64))
        )
    counts = (
        pl.concat(frames)
        .with_columns(
            kind=(pl.col("intervention").cast(pl.String) == "swap").cast(pl.Int8),
            a=pl.col("swap_pivot").cast(pl.Int64),
            b=pl.col("swap_k").cast(pl.Int64),
            position=pl.col("position").cast(pl.Int64),
        )
        .sort("rep", "kind", "a", "b", "position")
        .partition_by("rep", as_dict=True)
    )
    truth = _true(1.0, top_k)
    hits = np.zeros(top_k)
    for part in counts.values():  # a loop over independent logs
        est = pair_from_counts(
            {c: part[c].to_numpy() for c in ("kind", "a", "b", "position", "n", "c")}, design="swap"
        )
        hits += _covered(est, truth, 0.05)
    coverage = hits[1:] / len(counts)
    assert len(counts) == n_logs
    assert np.all((coverage >= 0.93) & (coverage <= 0.97)), coverage


def test_fast_path_counts_equal_the_log_estimator(data):
    log = simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=4000,
        top_k=5,
        interventions=[Swap(0.5)],
        seed=7,
    )
    agg = (
        log.group_by("intervention", "swap_pivot", "swap_k", "position")
        .agg(n=pl.len().cast(pl.Float64), c=pl.col("click").sum().cast(pl.Float64))
        .with_columns(
            kind=(pl.col("intervention").cast(pl.String) == "swap").cast(pl.Int8),
            a=pl.col("swap_pivot").cast(pl.Int64),
            b=pl.col("swap_k").cast(pl.Int64),
        )
    )
    fast = pair_from_counts(
        {c: agg[c].to_numpy() for c in ("kind", "a", "b", "position", "n", "c")}, design="swap"
    )
    full = swap(log)
    np.testing.assert_array_equal(fast.theta, full.theta)
    np.testing.assert_array_equal(fast.se, full.se)


def test_swap_top_and_bottom_routes_agree_within_their_uncertainty(intervention_log):
    _, log = intervention_log
    top, bottom = swap(log, route="top"), swap(log, route="bottom")
    assert top.info["route"] == "top" and bottom.info["route"] == "bottom"
    z = np.abs(np.log(top.theta[1:]) - np.log(bottom.theta[1:])) / np.hypot(
        top.se[1:], bottom.se[1:]
    )
    assert np.all(z < norm.isf(ALPHA_EACH / 2))


# -- flags and errors --------------------------------------------------------------------


def _small_log(data, **kw):
    base = dict(
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=3000,
        seed=1,
    )
    base.update(kw)
    return simulate(data, **base)


def test_swap_on_a_log_without_swaps_raises_a_clear_error(data):
    log = _small_log(data)
    with pytest.raises(EstimationError, match="no swap sessions"):
        swap(log)
    with pytest.raises(EstimationError, match="no randomized sessions"):
        randomized(log)


def test_a_position_never_swapped_is_nan_and_flagged(data):
    log = _small_log(data, interventions=[Swap(0.5, k=3)], n_sessions=20_000)
    result = swap(log, K=4)
    assert np.isnan(result.theta[1]) and np.isnan(result.theta[3])
    assert np.isfinite(result.theta[2])
    assert list(result.identified) == [True, False, True, False]
    assert any(w.startswith("position 2:") for w in result.warnings)
    assert any(w.startswith("position 4:") for w in result.warnings)
    assert np.isnan(result.conf_int().row(1, named=True)["lower"])
    assert np.isnan(result.conf_int().row(1, named=True)["upper"])
    assert "[1]" in result.summary() and "not identified" in result.summary()


def test_zero_clicks_at_position_one_is_an_error(data):
    log = _small_log(data, interventions=[Randomize(1.0)]).with_columns(
        click=pl.when(pl.col("position") == 1).then(False).otherwise(pl.col("click"))
    )
    with pytest.raises(EstimationError, match="no clicks at position 1"):
        randomized(log)
    swapped = _small_log(data, interventions=[Swap(0.5)]).with_columns(
        click=pl.when(pl.col("position") == 1).then(False).otherwise(pl.col("click"))
    )
    with pytest.raises(EstimationError, match="no position beyond 1"):
        swap(swapped)


def test_em_and_harvesting_refuse_a_single_deterministic_ranker(data):
    log = _small_log(data)  # every (query, doc) always at the same position
    with pytest.raises(EstimationError, match="not identified"):
        em(log, n_boot=0)
    with pytest.raises(EstimationError, match="no \\(query, doc\\) pair"):
        harvest(log)


def test_em_flags_positions_disconnected_from_position_one():
    # two queries; q0 docs move between positions 1-2, q1 docs between 3-4 only
    rows = []
    rng = np.random.default_rng(0)
    for s in range(4000):
        q = s % 2
        order = rng.permutation(2)
        for i, d in enumerate(order):
            rows.append((s, q, (1 if q == 0 else 3) + i, d, bool(rng.random() < 0.3)))
    log = pl.DataFrame(rows, schema=["session", "query", "position", "doc", "click"], orient="row")
    result = em(log, n_boot=0)
    assert np.isfinite(result.theta[1])
    assert np.isnan(result.theta[2:]).all()
    assert any(w.startswith("position 3: not identified") for w in result.warnings)


def test_bad_input_errors_name_the_problem(data, tmp_path):
    with pytest.raises(InputError, match="method must be one of"):
        estimate_propensities(_small_log(data), method="magic")
    with pytest.raises(LogSchemaError, match="doc"):
        harvest(pl.DataFrame({"session": [1], "query": [1], "position": [1], "click": [True]}))
    with pytest.raises(InputError, match="log must be"):
        swap([1, 2, 3])
    with pytest.raises(LogSchemaError, match="no such file"):
        swap(tmp_path / "missing.parquet")
    with pytest.raises(InputError, match="K must be"):
        randomized(_small_log(data), K=1)
    no_k = _small_log(data, interventions=[Swap(0.5)]).drop("swap_k", "swap_pivot")
    with pytest.raises(LogSchemaError, match="swap_k"):
        swap(no_k)


def test_propensities_refuse_silent_nans():
    p = Propensities(theta=[1.0, np.nan], se=[0.0, np.nan], method="x", n_sessions=1, n=[1, 0])
    assert p.warnings and p.warnings[0].startswith("position 2:")
    with pytest.raises(InputError, match="one per position"):
        Propensities(theta=[1.0, 0.5], se=[0.0], method="x", n_sessions=1, n=[1, 1])


# -- result object -----------------------------------------------------------------------


def test_json_roundtrip_keeps_everything(one_log, tmp_path):
    result = bootstrap("randomized", one_log.head(200_000), n=5, seed=1)
    path = result.save(tmp_path / "theta.json")
    obj = json.loads(path.read_text())
    assert obj["theta"][0] == 1.0 and len(obj["lower"]) == K and obj["method"].startswith("rand")
    back = Propensities.load(path)
    np.testing.assert_array_equal(back.theta, result.theta)
    np.testing.assert_array_equal(back.se, result.se)
    np.testing.assert_array_equal(back.replicates, result.replicates)
    assert back.conf_int(0.1).equals(result.conf_int(0.1))
    assert back.warnings == result.warnings and back.info == result.info
    assert not list(tmp_path.glob(".*tmp"))
    with pytest.raises(InputError, match="exists"):
        result.save(path, overwrite=False)


def test_propensities_follow_the_result_contract(one_log, tmp_path):
    from clickrank._core._result import Result

    result = bootstrap("randomized", one_log.head(200_000), n=5, seed=1)
    assert isinstance(result, Result)
    assert Propensities.from_dict(result.to_dict()) == result
    assert Propensities.load(result.save(tmp_path / "t.json")) == result
    assert Propensities.from_dict({**result.to_dict(), "method": "other"}) != result
    # files written before the contract (no format/version keys) still load
    old = {k: v for k, v in result.to_dict().items() if k not in ("format", "version")}
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert Propensities.load(tmp_path / "old.json") == result
    (tmp_path / "new.json").write_text(
        json.dumps({**old, "format": "clickrank.propensities", "version": 99})
    )
    with pytest.raises(Exception, match="version 99 is newer"):
        Propensities.load(tmp_path / "new.json")


def test_json_with_nan_positions_roundtrips(tmp_path):
    p = Propensities(
        theta=[1.0, np.nan, 0.3], se=[0.0, np.nan, 0.1], method="swap", n_sessions=10, n=[5, 0, 5]
    )
    back = Propensities.load(p.save(tmp_path / "t.json"))
    assert np.isnan(back.theta[1]) and back.warnings == p.warnings


def test_load_reports_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{\n  'theta': }")
    with pytest.raises(Exception, match="bad.json:2"):
        Propensities.load(bad)
    bad.write_text('{"values": [1, 2]}')
    with pytest.raises(Exception, match="'theta' list"):
        Propensities.load(bad)


def test_to_frame_and_summary_agree(one_log):
    result = swap(one_log)
    frame = result.to_frame(0.05)
    ci = result.conf_int(0.05)
    assert frame.columns[:5] == ["position", "theta", "se_log", "lower", "upper"]
    assert ci.columns == ["position", "estimate", "lower", "upper", "alpha"]
    np.testing.assert_array_equal(frame["lower"].to_numpy(), ci["lower"].to_numpy())
    np.testing.assert_array_equal(frame["theta"].to_numpy(), ci["estimate"].to_numpy())
    text = result.summary()
    assert f"{result.theta[1]:.4f}" in text and f"{ci[1, 1]:.4f}" in text


def test_plot_returns_a_figure_with_finite_data(one_log, tmp_path):
    result = randomized(one_log)
    fig = result.plot(true_theta=power_law(K, 1.0), path=tmp_path / "theta.png")
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and ax.get_xlabel() and ax.get_ylabel()
    assert len(ax.get_legend().get_texts()) == 3
    for line in ax.get_lines():
        assert np.all(np.isfinite(line.get_ydata()))
    assert (tmp_path / "theta.png").stat().st_size > 1000
    import matplotlib.pyplot as plt

    assert not plt.get_fignums()  # drawn without pyplot: nothing left open


def test_bootstrap_is_reproducible_and_brackets_the_estimate(one_log):
    small = one_log.filter(pl.col("session") < 30_000)
    a = bootstrap(swap, small, n=8, seed=4)
    b = bootstrap("swap", small, n=8, seed=4)
    np.testing.assert_array_equal(a.replicates, b.replicates)
    analytic = swap(small)
    np.testing.assert_array_equal(a.theta, analytic.theta)
    # the bootstrap SD of log θ and the delta-method SE agree to within sampling error
    ratio = a.se[1:] / analytic.se[1:]
    assert np.all((ratio > 0.3) & (ratio < 2.5))


def test_methods_list_matches_dispatcher():
    assert set(METHODS) == {
        "swap",
        "randpair",
        "randomized",
        "harvest-allpairs",
        "harvest-pivot",
        "harvest-adjacent",
        "em",
        "regression-em",
        "auto",
    }


# -- CLI ---------------------------------------------------------------------------------


def test_cli_writes_json_and_plot(one_log, tmp_path):
    from click.testing import CliRunner

    import clickrank.cli.propensity  # noqa: F401  registers the command
    from clickrank.cli import cli

    path = tmp_path / "log.parquet"
    one_log.write_parquet(path)
    out = tmp_path / "theta.json"
    res = CliRunner().invoke(
        cli,
        [
            "propensity",
            str(path),
            "--method",
            "randomized",
            "--out",
            str(out),
            "--plot",
            str(tmp_path / "t.png"),
        ],
        obj={},
    )
    assert res.exit_code == 0, res.output
    assert "randomized" in res.output and json.loads(out.read_text())["theta"][0] == 1.0
    res = CliRunner().invoke(
        cli, ["propensity", str(path), "--method", "randomized", "--out", str(out)], obj={}
    )
    assert res.exit_code == 1 and "--force" in res.output


def test_cli_error_for_swap_on_a_log_without_swaps(data, tmp_path):
    from click.testing import CliRunner

    import clickrank.cli.propensity  # noqa: F401
    from clickrank.cli import cli

    path = tmp_path / "plain.parquet"
    _small_log(data).write_parquet(path)
    res = CliRunner().invoke(
        cli,
        ["propensity", str(path), "--method", "swap", "--out", str(tmp_path / "t.json")],
        obj={},
    )
    assert res.exit_code == 1
    assert "no swap sessions" in res.output and "Traceback" not in res.output


# -- streaming statistics and the bucketed bootstrap ----------------------------------------


def _mixed_log(data, n=20_000):
    mix = MixturePolicy([DeterministicPolicy(data.X[:, j], name=f"r{j}") for j in range(2)])
    return simulate(
        data,
        policy=mix,
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=n,
        interventions=[Swap(0.3), Randomize(0.3), RandPair(0.2)],
        seed=5,
        top_k=6,
    )


def _same_stats(a: dict, b: dict) -> None:
    keys = sorted(k for k in a if not k.startswith("_"))
    assert keys == sorted(k for k in b if not k.startswith("_"))
    for k in keys:
        np.testing.assert_allclose(np.asarray(a[k], dtype=float), np.asarray(b[k], dtype=float))


def test_co_clicks_in_session_order_equal_the_join_on_a_shuffled_log(data):
    from clickrank.propensity._randomized import randomized_statistics

    log = _mixed_log(data)
    ordered = randomized_statistics(log.lazy())
    shuffled = randomized_statistics(log.sample(fraction=1.0, shuffle=True, seed=2).lazy())
    _same_stats(ordered, shuffled)
    # the co-clicks by hand: sessions clicked at 1, their clicks per position
    rand = log.filter(pl.col("intervention") == "randomized")
    first = rand.filter((pl.col("position") == 1) & pl.col("click")).select("session")
    cc = (
        rand.join(first, on="session")
        .filter(pl.col("click"))
        .group_by("position")
        .len()
        .sort("position")
    )
    np.testing.assert_array_equal(ordered["cc"][: cc.height], cc["len"].to_numpy())


@pytest.mark.parametrize("method", ["swap", "randomized", "harvest-pivot"])
def test_bucketed_statistics_sum_to_the_statistics_of_the_whole_log(data, method):
    from clickrank.propensity import ESTIMATORS
    from clickrank.propensity._stats import reweight

    spec = ESTIMATORS[method]
    lf = _mixed_log(data).lazy()
    plain = spec.statistics(lf)
    bucketed = spec.statistics(lf, buckets=16, seed=3)
    _same_stats(plain, bucketed)
    _same_stats(plain, reweight(bucketed, np.ones(16)))
    half = reweight(bucketed, np.r_[np.ones(8), np.zeros(8)])
    assert 0.3 < half["n"].sum() / plain["n"].sum() < 0.7  # sessions spread over buckets


def test_sessions_are_counted_without_listing_them(data):
    from clickrank.propensity._harvest import cell_statistics

    log = _mixed_log(data, 5000)
    assert cell_statistics(log.lazy())["n_sessions"] == log["session"].n_unique() == 5000


def test_bootstrap_reads_the_log_once_and_reports_progress(data, monkeypatch):
    from clickrank.propensity import ESTIMATORS

    log = _mixed_log(data).lazy()
    calls = []
    spec = ESTIMATORS["em"]
    original = spec.statistics
    monkeypatch.setitem(
        ESTIMATORS,
        "em",
        type(spec)(
            spec.function, lambda lf, **kw: calls.append(kw) or original(lf, **kw), spec.fit
        ),
    )
    ticks: list[int] = []
    res = em(log, n_boot=12, seed=1, progress=ticks.append)
    assert len(calls) == 1 and calls[0]["buckets"] == 128 and ticks == [1] * 12
    assert res.replicates.shape == (12, 6) and np.all(np.isfinite(res.se[1:]))
    with pytest.raises(InputError, match="buckets must be >= 2"):
        bootstrap("swap", log, n=3, buckets=1)


@pytest.mark.parametrize("method", METHODS)
def test_K_beyond_the_deepest_logged_position_is_refused(data, method):
    log = _mixed_log(data, 4000)
    with pytest.raises(InputError, match=r"K=1000 exceeds the deepest position .* \(6\)"):
        kw = {"n_boot": 0} if method == "em" else {}
        if method in ("regression-em", "auto"):
            kw = {"n_boot": 0, "data": data}
        estimate_propensities(log, method=method, K=1000, **kw)


def test_propensities_off_the_theta_1_scale_are_refused_or_flagged(tmp_path):
    with pytest.raises(InputError, match="theta at position 1 is 0.5"):
        Propensities(theta=[0.5, 0.25], se=[0, 0.1], method="x", n_sessions=1, n=[1, 1])
    with pytest.raises(InputError, match=r"position 2 is 1.5 > 1; absolute"):
        Propensities(
            theta=[0.9, 1.5], se=[0, 0.1], method="x", n_sessions=1, n=[1, 1], absolute=True
        )
    p = Propensities(theta=[1.0, 1.2], se=[0, 0.1], method="x", n_sessions=1, n=[1, 1])
    assert any("position 2: theta = 1.2 > theta_1 = 1" in w for w in p.warnings)
    (tmp_path / "bad.json").write_text(json.dumps({"theta": [0.5, 0.25], "se": [0, 0.1]}))
    with pytest.raises(Exception, match="theta at position 1 is 0.5"):
        Propensities.load(tmp_path / "bad.json")


def test_read_theta_checks_the_scale_of_propensity_files(tmp_path):
    from clickrank import ClickRankError
    from clickrank._core._validation import ClickRankWarning
    from clickrank.targets import read_theta

    f = tmp_path / "t.json"
    f.write_text("[0.9, 0.5, 0.3]")
    with pytest.raises(ClickRankError, match=r"t.json, column 'theta': theta at position 1 is"):
        read_theta(f)
    f.write_text('{"theta": [0.9, 0.5, 0.3], "absolute": true}')
    np.testing.assert_allclose(read_theta(f), [0.9, 0.5, 0.3])
    f.write_text('{"theta": [0.9, 1.5], "absolute": true}')
    with pytest.raises(ClickRankError, match="> 1; absolute propensities"):
        read_theta(f)
    f.write_text("[1.0, 1.1, 0.5]")
    with pytest.raises(ClickRankError, match="position 2 is 1.1 > theta_1 = 1 with no interval"):
        read_theta(f)
    f.write_text('{"theta": [1.0, 1.1, 0.5], "lower": [1.0, 0.95, 0.4]}')  # noise: warned
    with pytest.warns(ClickRankWarning, match="position 2: theta = 1.1 > theta_1 = 1"):
        read_theta(f)
    f.write_text("[true, false]")
    with pytest.raises(ClickRankError, match="position 1 is true; expected a number"):
        read_theta(f)


# -- intervals that keep their level (issue 21) -------------------------------------------


def test_ratio_score_interval_solves_the_score_equation_and_keeps_its_level():
    from clickrank.propensity._intervals import ratio_score_interval

    z = norm.isf(0.025)
    ci = ratio_score_interval(20.0, 100.0, 300.0, 1000.0, z)
    est = (20 / 100) / (300 / 1000)
    assert ci[0] < est < ci[1]
    for phi in ci:  # the bounds are where the score statistic equals z^2
        a, b, c = phi * 1100, -(phi * 100 + 20 + 1000 + phi * 300), 320
        q0 = (-b - np.sqrt(b * b - 4 * a * c)) / (2 * a)
        q1 = phi * q0
        stat = (0.2 - phi * 0.3) ** 2 / (q1 * (1 - q1) / 100 + phi**2 * q0 * (1 - q0) / 1000)
        assert stat == pytest.approx(z * z, rel=1e-6)
    # no clicks in the numerator: lower bound 0, finite upper; none in the denominator: inf
    assert ratio_score_interval(0.0, 50.0, 30.0, 100.0, z)[0] == 0.0
    assert np.isfinite(ratio_score_interval(0.0, 50.0, 30.0, 100.0, z)[1])
    assert ratio_score_interval(5.0, 50.0, 0.0, 100.0, z)[1] == np.inf
    # with many clicks it is the delta-method interval on the log scale
    big = ratio_score_interval(4e4, 1e5, 6e4, 1e5, z)
    se = np.sqrt(0.6 / 4e4 + 0.4 / 6e4)
    np.testing.assert_allclose(big, (4 / 6) * np.exp([-z * se, z * se]), rtol=2e-3)
    # coverage with 10-30 clicks in the numerator (where the delta method undercovered)
    rng = np.random.default_rng(0)
    n1, p1, n0, p0 = 110, 0.16, 1000, 0.32
    c1, c0 = rng.binomial(n1, p1, 4000), rng.binomial(n0, p0, 4000)
    cis = ratio_score_interval(c1, np.full(4000, n1), c0, np.full(4000, n0), z)
    cover = np.mean((cis[:, 0] <= p1 / p0) & (p1 / p0 <= cis[:, 1]))
    assert 0.935 <= cover <= 0.965


def test_swap_gives_score_intervals_and_harvest_t_intervals(harvest_log_for_intervals):
    from scipy.stats import t as t_dist

    log = harvest_log_for_intervals
    for method in ("harvest-pivot", "harvest-adjacent", "harvest-allpairs"):
        est = estimate_propensities(log, method=method)
        assert est.ci_method == "t" and est.df[0] == np.inf
        ok = np.isfinite(est.se) & (est.se > 0)
        assert np.all(est.df[ok] >= 1)
        q = t_dist.isf(0.025, est.df[ok])
        ci = est.conf_int(0.05).select("lower", "upper").to_numpy()[ok]
        np.testing.assert_allclose(ci[:, 1], est.theta[ok] * np.exp(q * est.se[ok]))
        assert np.all(q > norm.isf(0.025))  # wider than the normal interval
        back = Propensities.from_dict(json.loads(json.dumps(est.to_dict())))
        np.testing.assert_allclose(back.conf_int().select("lower", "upper").to_numpy()[ok], ci)


def test_swap_score_intervals_round_trip():
    data = synthetic(40, 10, seed=1)
    log = simulate(
        data, policy=DeterministicPolicy(data.X[:, 0]), click_model=make_click_model("pbm"),
        n_sessions=20_000, interventions=[Swap(0.5)], top_k=5, seed=3,
    )  # fmt: skip
    est = estimate_propensities(log, method="swap")
    assert est.ci_method == "score" and est.ci_counts.shape == (5, 4)
    ci = est.conf_int(0.05).select("lower", "upper").to_numpy()
    assert ci[0, 0] == ci[0, 1] == 1.0
    assert np.all(ci[1:, 0] < est.theta[1:]) and np.all(est.theta[1:] < ci[1:, 1])
    back = Propensities.from_dict(json.loads(json.dumps(est.to_dict())))
    np.testing.assert_allclose(back.conf_int().select("lower", "upper").to_numpy(), ci)
    with pytest.raises(InputError, match="ci_counts"):
        Propensities(theta=est.theta, se=est.se, method="swap", n_sessions=1, n=est.n,
                     ci_method="score")  # fmt: skip
    with pytest.raises(InputError, match="df"):
        Propensities(theta=est.theta, se=est.se, method="swap", n_sessions=1, n=est.n,
                     ci_method="t")  # fmt: skip


@pytest.fixture(scope="module")
def harvest_log_for_intervals():
    small = synthetic(30, 10, seed=0)
    mix = MixturePolicy([DeterministicPolicy(small.X[:, j], name=f"r{j}") for j in range(3)])
    return simulate(
        small, policy=mix, click_model=make_click_model("pbm", eta=1.0), n_sessions=20_000, seed=23
    )
