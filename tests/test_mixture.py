"""UserMixture: a population of click models, one user type per session."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clickrank import InputError
from clickrank.clickmodels import (
    DBN,
    DCM,
    PBM,
    Cascade,
    ClickModel,
    PowerLaw,
    UserMixture,
    binarized,
    make_click_model,
    pbm_population,
    web_search_population,
)

NAN = np.nan
LISTS = np.array(
    [
        [4, 0, 2, 1],
        [0, 0, 3, 4],
        [2, 2, NAN, NAN],
        [1, 3, 0, 2],
    ]
)


def mixed():
    return UserMixture(
        [PBM(PowerLaw(2.0)), Cascade(), DCM(continuation=0.6), DBN(gamma=0.7)],
        [0.4, 0.2, 0.3, 0.1],
        ["economic", "navigational", "exhaustive", "dbn"],
    )


def _pbm_exact_joint(theta, alpha):
    """All 2^K click vectors of one PBM session with their probabilities (enumeration)."""
    K = len(theta)
    vecs = np.array(np.meshgrid(*[[0, 1]] * K, indexing="ij")).reshape(K, -1).T.astype(bool)
    p = theta * alpha
    probs = np.prod(np.where(vecs, p, 1 - p), axis=1)
    return vecs, probs


def test_protocol_and_uniform_count():
    m = mixed()
    assert isinstance(m, ClickModel)
    assert m.n_uniforms == 1 + 2  # DCM/DBN use two uniforms
    assert m.weights.sum() == pytest.approx(1.0)
    assert "navigational" in m.summary() and "UserMixture" in repr(m)


def test_click_probabilities_are_the_weighted_component_marginals():
    m = mixed()
    want = sum(
        w * c.click_probabilities(LISTS) for w, c in zip(m.weights, m.components, strict=True)
    )
    np.testing.assert_allclose(m.click_probabilities(LISTS), want, rtol=0, atol=1e-15)
    comp = m.component_probabilities(LISTS)
    assert comp.shape == (4, *LISTS.shape)
    np.testing.assert_allclose(np.tensordot(m.weights, comp, axes=1), want, atol=1e-15)
    assert np.all(m.click_probabilities(LISTS)[np.isnan(LISTS)] == 0)


def test_joint_click_distribution_matches_enumeration_over_types():
    """Exact P(click vector) of a two-type PBM mixture by enumerating types x 2^K outcomes.

    The mixture's clicks are correlated within a session (through the type), unlike
    any single PBM with the same marginals; the sampled joint must follow the mixture.
    """
    alpha_map = binarized(threshold=1, eps_plus=0.9, eps_minus=0.1)
    comps = [PBM(PowerLaw(0.3), alpha_map), PBM(PowerLaw(3.0), alpha_map)]
    w = np.array([0.35, 0.65])
    m = UserMixture(comps, w)
    labels = np.array([[1.0, 0.0, 1.0]])  # position 1 always examined
    alpha = alpha_map(labels[0])
    joint = {}
    for wc, c in zip(w, comps, strict=True):
        vecs, probs = _pbm_exact_joint(c.propensities(3), alpha)
        for v, p in zip(vecs, probs, strict=True):
            joint[tuple(v)] = joint.get(tuple(v), 0.0) + wc * p
    # marginals from the enumeration equal click_probabilities
    marg = np.array([sum(p for v, p in joint.items() if v[j]) for j in range(3)])
    np.testing.assert_allclose(m.click_probabilities(labels)[0], marg, atol=1e-15)
    # Monte Carlo of the joint distribution, 4 SE per outcome
    n = 200_000
    u = np.random.default_rng(11).random((n, 3, m.n_uniforms))
    c = m.sample(np.repeat(labels, n, axis=0), u)
    codes = c @ np.array([4, 2, 1])
    freq = np.bincount(codes, minlength=8) / n
    for v, p in joint.items():
        code = 4 * v[0] + 2 * v[1] + v[2]
        se = math.sqrt(p * (1 - p) / n)
        assert abs(freq[code] - p) <= 4 * se + 1e-12, (v, freq[code], p)
    # the within-session correlation a homogeneous PBM cannot produce
    p23 = joint[(False, True, True)] + joint[(True, True, True)]
    assert p23 > 1.5 * marg[1] * marg[2]


def test_sampled_rates_match_marginals_overall_and_per_type():
    m = mixed()
    n = 60_000
    labels = np.tile(LISTS, (n // len(LISTS), 1))
    u = np.random.default_rng(3).random((*labels.shape, m.n_uniforms))
    clicks = m.sample(labels, u)
    p = m.click_probabilities(labels)
    types = m.user_types(u)
    for q in range(len(LISTS)):  # overall, per list
        rows = slice(q, None, len(LISTS))
        rate, prob = clicks[rows].mean(0), p[rows][0]
        se = np.sqrt(np.maximum(prob * (1 - prob), 1e-12) / clicks[rows].shape[0])
        assert np.all(np.abs(rate - prob) <= 4 * se + 1e-12), (q, rate, prob)
    comp = m.component_probabilities(labels)
    for c in range(len(m.components)):  # per type: sessions of type c click by model c
        sel = types == c
        share = sel.mean()
        assert abs(share - m.weights[c]) <= 4 * math.sqrt(m.weights[c] * (1 - m.weights[c]) / n)
        rate, prob = clicks[sel].mean(0), comp[c][sel].mean(0)
        se = np.sqrt(np.maximum(comp[c][sel].var(0) + prob * (1 - prob), 1e-12) / sel.sum())
        assert np.all(np.abs(rate - prob) <= 4 * se + 1e-12), (c, rate, prob)


def test_sessions_of_a_type_click_exactly_as_that_component_with_its_uniforms():
    m = mixed()
    labels = np.repeat(LISTS, 500, axis=0)
    u = np.random.default_rng(5).random((*labels.shape, m.n_uniforms))
    clicks, types = m.sample(labels, u), m.user_types(u)
    for c, comp in enumerate(m.components):
        sel = types == c
        np.testing.assert_array_equal(
            clicks[sel], comp.sample(labels[sel], u[sel][:, :, : comp.n_uniforms])
        )


def test_sample_is_deterministic_and_independent_of_chunking():
    m = mixed()
    labels = np.repeat(LISTS, 250, axis=0)
    u = np.random.default_rng(9).random((*labels.shape, m.n_uniforms))
    whole = m.sample(labels, u)
    np.testing.assert_array_equal(whole, m.sample(labels, u.copy()))
    parts = np.concatenate(
        [m.sample(labels[i : i + 97], u[i : i + 97]) for i in range(0, len(labels), 97)]
    )
    np.testing.assert_array_equal(whole, parts)
    assert not np.any(whole[np.isnan(labels)])


def test_mixture_of_pbms_with_one_attractiveness_is_a_pbm_with_averaged_propensities():
    m = UserMixture([PBM(PowerLaw(0.5)), PBM(PowerLaw(2.0))], [0.25, 0.75])
    theta = 0.25 * np.arange(1, 6) ** -0.5 + 0.75 * np.arange(1, 6) ** -2.0
    np.testing.assert_allclose(m.propensities(5), theta)
    np.testing.assert_allclose(m.propensities(5, normalize=True), theta / theta[0])
    labels = np.array([[4.0, 1, 0, 3, 2]])
    np.testing.assert_allclose(
        m.click_probabilities(labels), PBM(theta.tolist()).click_probabilities(labels), atol=1e-15
    )
    with pytest.raises(InputError, match="PBM"):
        mixed().propensities(5)
    with pytest.raises(InputError, match="attractiveness"):
        pbm_population(1.0, 0.5, 2, noise=(0.1, 0.3)).propensities(5)


def test_pbm_population_grid_is_log_normal_mid_quantiles():
    pop = pbm_population(1.5, 0.4, 4, noise=(0.05, 0.2))
    assert len(pop.components) == 8 and np.allclose(pop.weights, 1 / 8)
    etas = sorted({c.examination.eta for c in pop.components})
    logs = np.log(etas)
    assert np.allclose(logs, -logs[::-1] + 2 * math.log(1.5))  # symmetric about log median
    assert math.exp(np.median(logs)) == pytest.approx(1.5)
    homo = pbm_population(1.0, 0.0, 3)
    np.testing.assert_allclose(homo.click_probabilities(LISTS), PBM().click_probabilities(LISTS))


def test_web_population_and_factory():
    web = web_search_population()
    assert web.names == ("navigational", "economic", "exhaustive", "low-engagement")
    assert web.weights.sum() == pytest.approx(1.0)
    w2 = web_search_population(weights={"navigational": 0.0})
    assert w2.weights[0] == 0 and w2.weights.sum() == pytest.approx(1.0)
    m = make_click_model(
        "mixture", components=[{"name": "pbm", "eta": 2.0}, Cascade()], weights=[3, 1]
    )
    assert isinstance(m, UserMixture) and m.weights.tolist() == [0.75, 0.25]
    assert isinstance(make_click_model("web-population"), UserMixture)
    assert len(make_click_model("pbm-population", n_types=3).components) == 3


def test_bad_inputs_are_rejected():
    with pytest.raises(InputError, match="non-empty"):
        UserMixture([])
    with pytest.raises(InputError, match="not a click model"):
        UserMixture([PBM(), object()])
    with pytest.raises(InputError, match="weights"):
        UserMixture([PBM(), Cascade()], [1.0])
    with pytest.raises(InputError, match="weights"):
        UserMixture([PBM(), Cascade()], [1.0, -0.5])
    with pytest.raises(InputError, match="names"):
        UserMixture([PBM(), Cascade()], names=["a"])
    m = mixed()
    with pytest.raises(InputError, match="shape"):
        m.sample(LISTS, np.zeros((*LISTS.shape, 1)))
    with pytest.raises(InputError, match="unknown user type"):
        web_search_population(weights={"robot": 0.5})
    with pytest.raises(InputError, match="name"):
        make_click_model("mixture", components=[{"eta": 1.0}])
