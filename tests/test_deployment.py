"""Exposure-based counterfactual risk minimisation (clickrank.training.deployment): the
divergence, the penalty's forces against a brute-force reference, and LambdaMART's ``risk``
option."""

from __future__ import annotations

import itertools

import numba
import numpy as np
import pytest

from clickrank import InputError
from clickrank.clickmodels import make_click_model
from clickrank.datasets import split_queries, synthetic
from clickrank.lambdamart import LambdaMART
from clickrank.policies import DeterministicPolicy
from clickrank.policies.production import production_ranker
from clickrank.simulation import Swap, simulate
from clickrank.targets import ips
from clickrank.training.deployment import RiskPenalty, exposure, exposure_divergence, risk_weight


def _d2(scores, ref):
    """One query's divergence from its definition: normalised exposures, sum of w^2/w0."""
    n = len(scores)
    disc = 1 / np.log2(2 + np.arange(n))
    w = np.empty(n)
    w0 = np.empty(n)
    w[np.argsort(-np.asarray(scores), kind="stable")] = disc
    w0[np.argsort(-np.asarray(ref), kind="stable")] = disc
    w, w0 = w / disc.sum(), w0 / disc.sum()
    return float(np.sum(w**2 / w0))


def test_divergence_is_one_at_the_safe_ranking_and_matches_its_definition():
    rng = np.random.default_rng(0)
    qptr = np.array([0, 5, 6, 13])
    ref = rng.random(13)
    s = rng.random(13)
    np.testing.assert_allclose(exposure_divergence(ref, ref, qptr), 1.0)
    got = exposure_divergence(s, ref, qptr)
    want = [_d2(s[a:b], ref[a:b]) for a, b in itertools.pairwise(qptr)]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert np.all(got[[0, 2]] > 1.0) and got[1] == 1.0  # one document: nothing to diverge


def _brute_forces(s, ref, qptr, alpha, sigma=1.0, trunc=None):
    """The penalty's LambdaRank forces pair by pair, with the swap's divergence change
    computed by actually swapping the two documents."""
    d2 = np.mean([_d2(s[a:b], ref[a:b]) for a, b in itertools.pairwise(qptr)])
    kappa = alpha / (2 * np.sqrt(d2))
    forces, weights = np.zeros(len(s)), np.zeros(len(s))
    for a, b in itertools.pairwise(qptr):
        order = a + np.argsort(-s[a:b], kind="stable")
        for i, j in itertools.combinations(range(b - a), 2):
            if trunc is not None and i >= trunc:
                continue
            ri, rj = order[i], order[j]
            swapped = s[a:b].copy()
            swapped[[ri - a, rj - a]] = swapped[[rj - a, ri - a]]
            delta = _d2(swapped, ref[a:b]) - _d2(s[a:b], ref[a:b])
            if delta == 0:
                continue
            # the swap raises the divergence: the pair is in the order the penalty wants
            hi, lo = (ri, rj) if delta > 0 else (rj, ri)
            rho = 1 / (1 + np.exp(sigma * (s[hi] - s[lo])))
            f = sigma * rho * kappa * abs(delta)
            forces[hi] += f
            forces[lo] -= f
            weights[[hi, lo]] += sigma * f * (1 - rho)
    return d2, forces, weights


@pytest.mark.parametrize("trunc", [None, 2])
def test_penalty_forces_match_a_brute_force_swap_by_swap_computation(trunc):
    rng = np.random.default_rng(1)
    qptr = np.array([0, 6, 7, 15])
    ref, s = rng.random(15), rng.normal(size=15)
    pen = RiskPenalty(ref, qptr, alpha=0.3, sigma=1.5, truncation=trunc)
    f, w = np.zeros(15), np.zeros(15)
    d2 = pen.add(s, f, w)
    want_d2, want_f, want_w = _brute_forces(s, ref, qptr, 0.3, sigma=1.5, trunc=trunc)
    assert d2 == pytest.approx(want_d2, rel=1e-12)
    np.testing.assert_allclose(f, want_f, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(w, want_w, rtol=1e-10, atol=1e-15)
    assert abs(f[:6].sum()) < 1e-12 and np.all(w >= 0)


@pytest.mark.parametrize("trunc", [None, 5])
def test_penalty_on_two_threads_gives_the_same_bits(trunc):
    rng = np.random.default_rng(4)
    lens = rng.integers(0, 40, 50)
    qptr = np.concatenate([[0], np.cumsum(lens)])
    ref, s = rng.random(qptr[-1]), rng.normal(size=qptr[-1])
    out = []
    for threads in (1, 2):
        pen = RiskPenalty(ref, qptr, alpha=0.3, truncation=trunc, n_threads=threads)
        f, w = np.zeros(qptr[-1]), np.zeros(qptr[-1])
        out.append((pen.add(s, f, w), f, w))
    assert out[0][0] == out[1][0]
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][2], out[1][2])
    assert np.abs(out[0][1]).sum() > 0
    with pytest.raises(InputError, match="n_threads"):
        RiskPenalty(ref, qptr, alpha=0.3, n_threads=0)
    if numba.config.NUMBA_NUM_THREADS >= 2:  # the caller's thread count is restored
        before = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            pen.add(s, f, w)
            assert numba.get_num_threads() == 1
        finally:
            numba.set_num_threads(before)


def test_penalty_pulls_towards_the_safe_ranking_and_vanishes_there_or_at_zero_weight():
    qptr = np.array([0, 4])
    ref = np.array([4.0, 3.0, 2.0, 1.0])
    f, w = np.zeros(4), np.zeros(4)
    RiskPenalty(ref, qptr, alpha=1.0).add(-ref, f, w)  # the reverse ranking
    assert f[0] > 0 > f[3]  # the safe ranker's first is pushed up, its last down
    f0, w0 = np.zeros(4), np.zeros(4)
    RiskPenalty(ref, qptr, alpha=0.0).add(-ref, f0, w0)
    assert not f0.any() and not w0.any()
    # at the safe ranking every pair is already in the order the penalty wants: the forces
    # only hold it there (all towards the safe order), they never push it away
    fs, _ = np.zeros(4), np.zeros(4)
    RiskPenalty(ref, qptr, alpha=1.0).add(ref, fs, np.zeros(4))
    assert fs[0] > 0 and fs[3] < 0


def test_risk_weight_follows_the_bound():
    assert risk_weight(100, 0.5) == pytest.approx(0.1)
    assert risk_weight(2000) == pytest.approx(np.sqrt(19 / 2000))
    assert risk_weight(8000) == pytest.approx(risk_weight(2000) / 2)  # 1/sqrt(N)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(InputError, match="confidence"):
            risk_weight(100, bad)
    with pytest.raises(InputError, match="n_sessions"):
        risk_weight(0)


@pytest.fixture(scope="module")
def setup():
    data = synthetic(300, 20, seed=5)
    train, _ = split_queries(data, [200, 100], seed=5)
    prod = production_ranker(train, 0.1, seed=5)
    cm = make_click_model("pbm", eta=1.0, attractiveness="graded")
    log = simulate(train, policy=DeterministicPolicy(prod), click_model=cm, n_sessions=2_000,
                   interventions=[Swap(0.1)], top_k=10, seed=5)  # fmt: skip
    return train, ips(train, log, cm.propensities(10), candidates="all"), prod.predict(train.X)


def test_lambdamart_risk_keeps_the_learned_exposures_near_the_safe_ones(setup):
    """The larger the CRM weight, the smaller the divergence of the trained ranking from
    the safe one; the divergence is recorded every round and falls under a strong weight."""
    train, tgt, ref = setup

    def fit(risk):
        return LambdaMART(n_estimators=60, seed=0, risk=risk).fit(train, tgt, reference=ref)

    models = {r: fit(r) for r in (None, 0.5, 5.0)}
    d = {r: float(exposure_divergence(m.predict(train.X), ref, train.qptr).mean())
         for r, m in models.items()}  # fmt: skip
    # measured 1.075, 1.063, 1.033 (a weight of 0.05 is within the trees' noise: 1.078)
    assert d[5.0] < d[0.5] < d[None]
    assert models[None].divergence_ == [] and len(models[5.0].divergence_) == 60
    assert models[5.0].divergence_[-1] < models[0.5].divergence_[-1]
    # rankings must agree far more with the safe ones under the strong weight
    same = {r: np.mean(exposure(m.predict(train.X), train.qptr) == exposure(ref, train.qptr))
            for r, m in models.items()}  # fmt: skip
    assert same[5.0] > same[None]


def test_lambdamart_safety_options_need_the_safe_rankings(setup):
    train, tgt, ref = setup
    for opts in ({"risk": 0.1}, {"proximal": 0.2}):
        with pytest.raises(InputError, match="reference"):
            LambdaMART(n_estimators=2, **opts).fit(train, tgt)
    with pytest.raises(InputError, match="risk"):
        LambdaMART(n_estimators=2, risk=-1.0).fit(train, tgt, reference=ref)
