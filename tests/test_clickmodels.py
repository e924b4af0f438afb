"""Tests of clickrank.clickmodels, derived from the model definitions.

Three independent routes to the same numbers:

* a brute-force reference that enumerates every outcome of each model's
  generative story (written here in plain Python from the papers' definitions,
  with one Bernoulli coin per hidden variable) and sums the click patterns;
* Monte Carlo: many sessions sampled from seeded uniforms, compared with the
  exact marginals within 4 binomial standard errors;
* structural properties (stopping rules, swap ratios, reductions between models).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import clickrank.clickmodels as cm
from clickrank import DataFormatError, InputError

DATA = Path(__file__).parent / "data"
MATRIX_JSON = DATA / "click_matrix_tiangong.json"
NAN = float("nan")

# Label lists used throughout: graded 0..4, a trailing empty slot, and an empty
# slot in the middle (treated as an unattractive result the user passes over).
LISTS = np.array(
    [
        [4, 0, 2, 1, 3],
        [0, 0, 4, NAN, NAN],
        [2, 2, 2, 2, 2],
        [1, 3, NAN, 4, 0],
    ],
    dtype=np.float64,
)


# --------------------------------------------------------------------------
# Plain-Python definitions (independent of the package's vectorized code)
# --------------------------------------------------------------------------


def graded_py(y, eps=0.1, ymax=4):
    return 0.0 if math.isnan(y) else eps + (1 - eps) * (2**y - 1) / (2**ymax - 1)


def err_py(y, ymax=4):
    return 0.0 if math.isnan(y) else (2**y - 1) / 2**ymax


class _Branch(Exception):
    pass


def exact_by_enumeration(story, labels):
    """Marginal click probabilities of ``story`` by exhausting all coin outcomes.

    ``story(labels, flip)`` runs one session and returns its 0/1 clicks;
    ``flip(p)`` is a Bernoulli(p) coin. Every path through the coins is
    replayed from a recorded prefix, so each outcome is visited once with its
    exact probability.
    """
    K = len(labels)
    total = np.zeros(K)
    mass = 0.0
    stack = [()]
    while stack:
        prefix = stack.pop()
        state = {"i": 0, "prob": 1.0}

        def flip(p, prefix=prefix, state=state):
            if p <= 0.0:
                return False
            if p >= 1.0:
                return True
            if state["i"] == len(prefix):
                raise _Branch
            b = prefix[state["i"]]
            state["i"] += 1
            state["prob"] *= p if b else 1.0 - p
            return b

        try:
            clicks = story(labels, flip)
        except _Branch:
            stack.append((*prefix, True))
            stack.append((*prefix, False))
            continue
        total += state["prob"] * np.asarray(clicks, dtype=np.float64)
        mass += state["prob"]
    assert mass == pytest.approx(1.0, abs=1e-12)
    return total


def pbm_story(theta, attract=graded_py):
    def story(labels, flip):
        out = []
        for j, y in enumerate(labels):
            examined = flip(theta[j])
            attractive = flip(attract(y))
            out.append(int(examined and attractive))
        return out

    return story


def trust_story(theta, plus, minus, rho=graded_py):
    def story(labels, flip):
        out = []
        for j, y in enumerate(labels):
            examined = flip(theta[j])
            relevant = flip(rho(y))
            clicked = examined and flip(plus[j] if relevant else minus[j])
            out.append(int(clicked and not math.isnan(y)))
        return out

    return story


def cascade_story(labels, flip):
    out, stopped = [], False
    for y in labels:
        clicked = (not stopped) and flip(graded_py(y))
        out.append(int(clicked))
        stopped = stopped or clicked
    return out


def dcm_story(lam):
    def story(labels, flip):
        out, stopped = [], False
        for j, y in enumerate(labels):
            clicked = (not stopped) and flip(graded_py(y))
            out.append(int(clicked))
            if clicked and not flip(lam[j]):
                stopped = True
        return out

    return story


def dbn_story(gamma):
    """Chapelle & Zhang (2009): E_1 = 1, C = E*A, S | C=1 ~ sigma, E' = E*(1-S)*Bern(gamma)."""

    def story(labels, flip):
        out, examining = [], True
        for y in labels:
            if not examining:
                out.append(0)
                continue
            attractive = flip(graded_py(y))
            satisfied = attractive and flip(err_py(y))
            out.append(int(attractive))
            examining = (not satisfied) and flip(gamma)
        return out

    return story


def ubm_story(gamma_rows):
    def story(labels, flip):
        out, last = [], 0
        for j, y in enumerate(labels):
            r = j + 1
            examined = flip(gamma_rows[j][r - last - 1])
            attractive = flip(graded_py(y))
            clicked = examined and attractive
            out.append(int(clicked))
            if clicked:
                last = r
        return out

    return story


def matrix_story(matrix):
    def story(labels, flip):
        return [
            0 if math.isnan(y) else int(flip(matrix[max(int(y), 0)][j]))
            for j, y in enumerate(labels)
        ]

    return story


THETA5 = [1 / p for p in range(1, 6)]
PLUS5 = [1 - (p + 1) / 100 for p in range(1, 6)]
MINUS5 = [0.65 / p for p in range(1, 6)]
LAM5 = [0.5] * 5


def _matrix_rows():
    return json.loads(MATRIX_JSON.read_text())["click_prob"]


MODELS = {
    "pbm": (lambda: cm.PBM(), lambda: pbm_story(THETA5)),
    "pbm_eye": (
        lambda: cm.PBM(examination=cm.EyeTracking(2.0), attractiveness=cm.binarized(3, 0.9, 0.2)),
        lambda: pbm_story(
            [v**2 for v in (0.68, 0.61, 0.48, 0.34, 0.28)],
            lambda y: 0.0 if math.isnan(y) else (0.9 if y >= 3 else 0.2),
        ),
    ),
    "trust": (lambda: cm.TrustBias(), lambda: trust_story(THETA5, PLUS5, MINUS5)),
    "cascade": (lambda: cm.Cascade(), lambda: cascade_story),
    "dcm": (lambda: cm.DCM(), lambda: dcm_story(LAM5)),
    "dcm_positional": (
        lambda: cm.DCM(continuation=[0.9, 0.7, 0.5, 0.3, 0.1]),
        lambda: dcm_story([0.9, 0.7, 0.5, 0.3, 0.1]),
    ),
    "dbn": (lambda: cm.DBN(), lambda: dbn_story(0.9)),
    "sdbn": (lambda: cm.SDBN(), lambda: dbn_story(1.0)),
    "ubm": (lambda: cm.UBM(), lambda: ubm_story(cm.ULTRA_UBM_GAMMA)),
    "matrix": (lambda: cm.load_click_matrix(MATRIX_JSON), lambda: matrix_story(_matrix_rows())),
}


# --------------------------------------------------------------------------
# Exactness against the brute-force reference
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODELS))
def test_click_probabilities_equal_the_enumerated_generative_story(name):
    make_model, make_story = MODELS[name]
    model, story = make_model(), make_story()
    got = model.click_probabilities(LISTS)
    want = np.array([exact_by_enumeration(story, list(row)) for row in LISTS])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert got.dtype == np.float64 and got.shape == LISTS.shape


@pytest.mark.parametrize("name", sorted(MODELS))
def test_model_satisfies_the_protocol(name):
    model = MODELS[name][0]()
    assert isinstance(model, cm.ClickModel)
    assert isinstance(model.n_uniforms, int) and model.n_uniforms >= 1


# --------------------------------------------------------------------------
# Monte Carlo: sampled click rates match the exact marginals
# --------------------------------------------------------------------------


def _assert_within_se(clicks, probs, what, z=4.0):
    """Mean clicks vs mean probabilities of a group, within z binomial SE."""
    n = probs.size
    mean_p = probs.mean()
    se = math.sqrt(float(np.sum(probs * (1 - probs)))) / n
    mean_c = clicks.mean()
    if se == 0:
        assert mean_c == mean_p, what
    else:
        assert abs(mean_c - mean_p) <= z * se, f"{what}: {mean_c:.5f} vs {mean_p:.5f} (se {se:.5f})"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MODELS))
def test_sampled_click_rates_match_exact_marginals(name):
    model = MODELS[name][0]()
    S = 200_000
    rng = np.random.default_rng(20240611)
    # fixed lists, each repeated S / 4 times
    labels = np.repeat(LISTS, S // len(LISTS), axis=0)
    u = rng.random((labels.shape[0], labels.shape[1], model.n_uniforms))
    clicks = model.sample(labels, u)
    probs = model.click_probabilities(labels)
    for i in range(len(LISTS)):
        rows = slice(i * (S // 4), (i + 1) * (S // 4))
        for j in range(LISTS.shape[1]):
            _assert_within_se(clicks[rows, j], probs[rows, j], f"{name} list {i} position {j + 1}")
    # random labels: per (position, label)
    labels = rng.integers(0, 5, size=(S, 5)).astype(np.float64)
    labels[rng.random(S) < 0.2, 3:] = np.nan
    u = rng.random((S, 5, model.n_uniforms))
    clicks = model.sample(labels, u)
    probs = model.click_probabilities(labels)
    assert not clicks[np.isnan(labels)].any()
    for j in range(5):
        _assert_within_se(clicks[:, j], probs[:, j], f"{name} position {j + 1}")
        for y in range(5):
            m = labels[:, j] == y
            _assert_within_se(clicks[m, j], probs[m, j], f"{name} position {j + 1} label {y}")


# --------------------------------------------------------------------------
# Protocol properties: determinism, row independence, empty slots, checks
# --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(MODELS))
def test_sample_is_deterministic_and_rows_are_independent_of_chunking(name):
    model = MODELS[name][0]()
    rng = np.random.default_rng(7)
    labels = rng.integers(0, 5, size=(1000, 5)).astype(np.float64)
    labels[::3, 4] = np.nan
    u = rng.random((1000, 5, model.n_uniforms))
    whole = model.sample(labels, u)
    assert whole.dtype == np.bool_ and whole.shape == labels.shape
    np.testing.assert_array_equal(whole, model.sample(labels.copy(), u.copy()))
    chunks = np.concatenate(
        [model.sample(labels[a : a + 137], u[a : a + 137]) for a in range(0, 1000, 137)]
    )
    np.testing.assert_array_equal(whole, chunks)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_empty_slots_are_never_clicked_even_with_the_smallest_uniforms(name):
    model = MODELS[name][0]()
    labels = np.array([[NAN, 4, NAN, 4, NAN], [4, 4, 4, NAN, NAN]])
    u = np.zeros((2, 5, model.n_uniforms))
    clicks = model.sample(labels, u)
    assert not clicks[np.isnan(labels)].any()
    assert clicks[~np.isnan(labels)].any()  # u = 0 does click something
    assert np.all(model.click_probabilities(labels)[np.isnan(labels)] == 0)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bad_uniform_shapes_and_label_matrices_are_rejected(name):
    model = MODELS[name][0]()
    labels = LISTS[:2]
    with pytest.raises(InputError, match="u must have shape"):
        model.sample(labels, np.zeros((2, 5, model.n_uniforms + 1)))
    with pytest.raises(InputError, match="u must have shape"):
        model.sample(labels, np.zeros((3, 5, model.n_uniforms)))
    with pytest.raises(InputError, match="2-d"):
        model.click_probabilities(np.array([1.0, 2.0]))
    with pytest.raises(InputError, match="inf"):
        model.click_probabilities(np.array([[1.0, np.inf]]))


# --------------------------------------------------------------------------
# Cascade family: the stopping rules, read off the uniforms
# --------------------------------------------------------------------------


def _stop_flags(clicked, u1, after_click, after_skip):
    """Per position: does the user stop after it, given the continuation uniform?"""
    return np.where(clicked, u1 >= after_click, u1 >= after_skip)


@pytest.mark.parametrize(
    ("model", "after_click", "after_skip"),
    [
        (cm.Cascade(), lambda y: np.zeros_like(y), lambda y: np.ones_like(y)),
        (cm.DCM(continuation=0.6), lambda y: np.full_like(y, 0.6), lambda y: np.ones_like(y)),
        (
            cm.DBN(gamma=0.8),
            lambda y: 0.8 * (1 - np.vectorize(err_py)(y)),
            lambda y: np.full_like(y, 0.8),
        ),
        (cm.SDBN(), lambda y: 1 - np.vectorize(err_py)(y), lambda y: np.ones_like(y)),
    ],
    ids=["cascade", "dcm", "dbn", "sdbn"],
)
def test_cascade_family_clicks_follow_the_stopping_rule(model, after_click, after_skip):
    rng = np.random.default_rng(11)
    S, K = 20_000, 6
    labels = rng.integers(0, 5, size=(S, K)).astype(np.float64)
    u = rng.random((S, K, model.n_uniforms))
    clicks = model.sample(labels, u)
    attractive = u[..., 0] < np.vectorize(graded_py)(labels)
    u1 = u[..., 1] if model.n_uniforms > 1 else np.zeros((S, K))
    # Walk positions with the rule stated in the model's definition.
    examining = np.ones(S, dtype=bool)
    for j in range(K):
        # while examining, a click happens exactly when the document is attractive
        np.testing.assert_array_equal(clicks[examining, j], attractive[examining, j])
        # once stopped, never a click
        assert not clicks[~examining, j].any()
        stop = _stop_flags(
            clicks[:, j], u1[:, j], after_click(labels[:, j]), after_skip(labels[:, j])
        )
        examining &= ~stop
    if isinstance(model, cm.Cascade):
        assert clicks.sum(axis=1).max() == 1


def test_sdbn_examines_every_position_until_the_satisfied_click():
    rng = np.random.default_rng(3)
    labels = np.zeros((50_000, 5))  # label 0 never satisfies: sigma = 0
    u = rng.random((50_000, 5, 2))
    clicks = cm.SDBN().sample(labels, u)
    np.testing.assert_array_equal(clicks, u[..., 0] < 0.1)


def test_cascade_equals_dcm_without_continuation_and_dcm_with_full_continuation_is_pbm():
    labels = LISTS
    np.testing.assert_allclose(
        cm.Cascade().click_probabilities(labels),
        cm.DCM(continuation=0.0).click_probabilities(labels),
        atol=1e-15,
    )
    no_bias = cm.PBM(examination=cm.Constant(1.0)).click_probabilities(labels)
    np.testing.assert_allclose(cm.DCM(continuation=1.0).click_probabilities(labels), no_bias)
    never_satisfied = cm.table({y: 0.0 for y in range(5)})
    np.testing.assert_allclose(
        cm.SDBN(satisfaction=never_satisfied).click_probabilities(labels), no_bias
    )


def test_cascade_first_position_is_always_examined_and_later_ones_decay():
    p = cm.Cascade().click_probabilities(np.array([[2.0, 2.0, 2.0]]))[0]
    a = graded_py(2)
    np.testing.assert_allclose(p, [a, (1 - a) * a, (1 - a) ** 2 * a])


# --------------------------------------------------------------------------
# PBM and trust bias
# --------------------------------------------------------------------------


@pytest.mark.parametrize("k", [2, 3, 5])
def test_pbm_swap_ctr_ratio_estimates_the_examination_ratio(k):
    model = cm.PBM(examination=cm.PowerLaw(1.0))
    S = 200_000
    rng = np.random.default_rng(100 + k)
    labels = rng.integers(0, 3, size=(S, 5)).astype(np.float64)
    swapped = rng.random(S) < 0.5
    # the document of interest (label 3) sits at rank 1, or at rank k when swapped
    labels[~swapped, 0] = 3
    labels[swapped, k - 1] = 3
    clicks = model.sample(labels, rng.random((S, 5, 1)))
    c1 = clicks[~swapped, 0].mean()
    ck = clicks[swapped, k - 1].mean()
    n1, nk = (~swapped).sum(), swapped.sum()
    ratio = ck / c1
    se = ratio * math.sqrt((1 - c1) / (c1 * n1) + (1 - ck) / (ck * nk))  # delta method
    assert abs(ratio - 1 / k) <= 4 * se


def test_pbm_ips_worked_example_from_the_design():
    # click probability 0.3 after examination, shown at theta = 1.0 and 0.4
    model = cm.PBM(examination=[1.0, 0.4], attractiveness=cm.table({1: 0.3}))
    n = 100_000
    labels = np.ones((n, 2))
    clicks = model.sample(labels, np.random.default_rng(5).random((n, 2, 1)))
    theta = model.propensities(2)
    for j, expected_ctr in enumerate([0.3, 0.12]):
        se = math.sqrt(expected_ctr * (1 - expected_ctr) / n)
        assert abs(clicks[:, j].mean() - expected_ctr) <= 4 * se
        assert abs(clicks[:, j].mean() / theta[j] - 0.3) <= 4 * se / theta[j]


def test_pbm_propensities_are_the_examination_curve():
    np.testing.assert_allclose(
        cm.PBM(examination=cm.PowerLaw(1.5)).propensities(4), [1, 2**-1.5, 3**-1.5, 4**-1.5]
    )
    eye = cm.PBM(examination=cm.EyeTracking(1.0))
    np.testing.assert_allclose(eye.propensities(3), [0.68, 0.61, 0.48])
    np.testing.assert_allclose(eye.propensities(3, normalize=True), [1, 0.61 / 0.68, 0.48 / 0.68])
    assert eye.examination(2).tolist() == [0.68, 0.61]


def test_trust_bias_is_affine_in_the_relevance_probability():
    model = cm.TrustBias(examination=cm.PowerLaw(0.5))
    K = 7
    alpha, beta = model.affine_parameters(K)
    p = np.arange(1, K + 1)
    theta = p**-0.5
    plus, minus = 1 - (p + 1) / 100, 0.65 / p
    np.testing.assert_allclose(alpha, theta * (plus - minus))
    np.testing.assert_allclose(beta, theta * minus)
    labels = np.tile(np.array([0, 1, 2, 3, 4, 4, 0], dtype=float), (2, 1))
    rho = np.vectorize(graded_py)(labels)
    np.testing.assert_allclose(model.click_probabilities(labels), alpha * rho + beta)
    np.testing.assert_allclose(model.propensities(K), theta)


def test_trust_default_eps_plus_stops_being_a_probability_after_rank_99():
    with pytest.raises(InputError, match="position 100"):
        cm.TrustBias().affine_parameters(100)
    assert cm.TrustBias().affine_parameters(99)[0].shape == (99,)


# --------------------------------------------------------------------------
# UBM
# --------------------------------------------------------------------------


def test_ubm_with_distance_free_examination_is_pbm():
    theta = [0.9, 0.7, 0.5, 0.3, 0.2]
    gamma = [[t] * (r + 1) for r, t in enumerate(theta)]
    labels = LISTS
    np.testing.assert_allclose(
        cm.UBM(gamma=gamma).click_probabilities(labels),
        cm.PBM(examination=theta).click_probabilities(labels),
        atol=1e-15,
    )


def test_ubm_accepts_a_square_matrix_and_applies_eta():
    tri = [[0.9], [0.8, 0.6], [0.7, 0.5, 0.4]]
    square = np.array([[0.9, 7, 7], [0.8, 0.6, 7], [0.7, 0.5, 0.4]])  # 7s above the diagonal
    labels = np.array([[3.0, 1.0, 4.0]])
    np.testing.assert_allclose(
        cm.UBM(gamma=square).click_probabilities(labels),
        cm.UBM(gamma=tri).click_probabilities(labels),
    )
    sq = [[v**2 for v in row] for row in tri]
    np.testing.assert_allclose(
        cm.UBM(gamma=tri, eta=2).click_probabilities(labels),
        cm.UBM(gamma=sq).click_probabilities(labels),
    )
    assert np.isnan(cm.UBM(gamma=tri).examination_matrix(3)[0, 1])


def test_ubm_rejects_bad_tables_and_long_lists():
    with pytest.raises(InputError, match="rank 2"):
        cm.UBM(gamma=[[1.0], [0.5]])
    with pytest.raises(InputError, match=r"gamma\[rank 2\]\[distance 1\]"):
        cm.UBM(gamma=[[1.0], [1.5, 0.5]])
    with pytest.raises(InputError, match="covers 10 ranks"):
        cm.UBM().click_probabilities(np.zeros((1, 11)))
    with pytest.raises(InputError, match="eta"):
        cm.UBM(eta=-1)


# --------------------------------------------------------------------------
# Click matrix
# --------------------------------------------------------------------------


def test_click_matrix_reads_ultra_json_and_clamps_negative_labels():
    model = cm.load_click_matrix(MATRIX_JSON)
    rows = _matrix_rows()
    assert model.matrix.shape == (5, 10)
    labels = np.array([[4, 0, -1, 2, NAN, 3, 1, 0, 0, 4]], dtype=float)
    want = [0.0 if math.isnan(y) else rows[max(int(y), 0)][j] for j, y in enumerate(labels[0])]
    np.testing.assert_allclose(model.click_probabilities(labels)[0], want)


def test_click_matrix_rejects_bad_files_and_labels(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(DataFormatError, match="bad.json:1"):
        cm.load_click_matrix(bad)
    bad.write_text(json.dumps({"eta": 1}))
    with pytest.raises(DataFormatError, match="click_prob"):
        cm.load_click_matrix(bad)
    bad.write_text(json.dumps({"click_prob": [[0.1, 0.2], [0.3]]}))
    with pytest.raises(DataFormatError, match="equally long"):
        cm.load_click_matrix(bad)
    bad.write_text(json.dumps({"click_prob": [[0.1, 1.2]]}))
    with pytest.raises(DataFormatError, match="probabilities"):
        cm.load_click_matrix(bad)
    with pytest.raises(DataFormatError, match="cannot read"):
        cm.load_click_matrix(tmp_path / "missing.json")
    model = cm.ClickMatrix([[0.1, 0.2], [0.3, 0.4]])
    with pytest.raises(InputError, match="whole labels in 0..1"):
        model.click_probabilities(np.array([[0.5, 1.0]]))
    with pytest.raises(InputError, match="whole labels"):
        model.click_probabilities(np.array([[2.0, 1.0]]))
    with pytest.raises(InputError, match="covers 2 positions"):
        model.click_probabilities(np.zeros((1, 3)))


def test_shared_tiangong_matrix_matches_the_test_copy(shared_data):
    path = shared_data / "tiangong_st_click_matrix_ultra" / "click_matrix_tiangong.json"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    np.testing.assert_array_equal(
        cm.load_click_matrix(path).matrix, cm.load_click_matrix(MATRIX_JSON).matrix
    )


# --------------------------------------------------------------------------
# Curves and relevance maps
# --------------------------------------------------------------------------


def test_power_law_and_eye_tracking_curves_follow_their_formulas():
    np.testing.assert_allclose(cm.power_law(4, 2.0), [1, 1 / 4, 1 / 9, 1 / 16])
    np.testing.assert_allclose(cm.power_law(3, 0.0), [1, 1, 1])
    raw = [0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06]
    np.testing.assert_allclose(cm.eye_tracking(10, 1.5), np.array(raw) ** 1.5)
    np.testing.assert_allclose(cm.PowerLaw(1.0, scale=0.65)(3), [0.65, 0.325, 0.65 / 3])
    np.testing.assert_allclose(cm.Linear(0.99, -0.01)(3), [0.98, 0.97, 0.96])


def test_curves_reject_bad_parameters():
    with pytest.raises(InputError, match="eta"):
        cm.power_law(5, -0.5)
    with pytest.raises(InputError, match="eta"):
        cm.EyeTracking(-1)
    with pytest.raises(InputError, match="ranks 1..10"):
        cm.eye_tracking(11)
    with pytest.raises(InputError, match="K"):
        cm.power_law(0)
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        cm.PBM(examination=[1.0, 1.2])
    with pytest.raises(InputError, match="3 were requested"):
        cm.PBM(examination=[1.0, 0.5]).click_probabilities(np.zeros((1, 3)))
    with pytest.raises(InputError, match="position 2"):
        cm.Linear(0.5, 0.3)(3)
    with pytest.raises(InputError, match="continuation"):
        cm.DCM(continuation=1.5)


def test_relevance_maps_follow_their_formulas():
    y = np.array([[0, 1, 2, 3, 4, NAN]])
    np.testing.assert_allclose(cm.graded()(y), [[0.1, 0.16, 0.28, 0.52, 1.0, 0.0]])
    np.testing.assert_allclose(cm.graded(0.0, 2)(np.array([[0.0, 1, 2]])), [[0, 1 / 3, 1]])
    np.testing.assert_allclose(cm.binarized()(y), [[0.1, 0.1, 0.1, 1.0, 1.0, 0.0]])
    np.testing.assert_allclose(cm.binarized(threshold=1)(y), [[0.1, 1, 1, 1, 1, 0]])
    np.testing.assert_allclose(cm.err_satisfaction()(y), [[0, 1 / 16, 3 / 16, 7 / 16, 15 / 16, 0]])
    np.testing.assert_allclose(
        cm.table({0: 0.05, 1: 0.5, 2: 0.95})(np.array([[2.0, NAN, 0]])), [[0.95, 0.0, 0.05]]
    )


def test_relevance_maps_reject_bad_parameters_and_labels():
    with pytest.raises(InputError, match="eps_minus"):
        cm.binarized(eps_minus=-0.1)
    with pytest.raises(InputError, match="eps_plus"):
        cm.binarized(eps_plus=1.1)
    with pytest.raises(InputError, match="threshold"):
        cm.binarized(threshold=float("nan"))
    with pytest.raises(InputError, match="eps"):
        cm.graded(eps=2)
    with pytest.raises(InputError, match=r"labels in \[0, 2\]"):
        cm.graded(max_label=2)(np.array([[0.0, 3.0]]))
    with pytest.raises(InputError, match="not in the relevance table"):
        cm.table({0: 0.1, 1: 0.9})(np.array([[0.0, 2.0]]))
    with pytest.raises(InputError, match="probability of label 1"):
        cm.table({0: 0.1, 1: 1.9})
    with pytest.raises(InputError, match="kind"):
        cm.PBM(attractiveness="sigmoid")


def test_custom_callables_are_checked():
    model = cm.PBM(attractiveness=lambda y: np.full_like(y, 2.0))
    with pytest.raises(InputError, match="outside"):
        model.click_probabilities(np.zeros((1, 2)))
    model = cm.PBM(examination=lambda K: np.ones(K + 1))
    with pytest.raises(InputError, match="shape"):
        model.click_probabilities(np.zeros((1, 2)))


# --------------------------------------------------------------------------
# Factory
# --------------------------------------------------------------------------


def test_factory_builds_every_model_and_passes_parameters():
    expected = {
        "pbm": cm.PBM,
        "trust": cm.TrustBias,
        "cascade": cm.Cascade,
        "dcm": cm.DCM,
        "dbn": cm.DBN,
        "sdbn": cm.SDBN,
        "ubm": cm.UBM,
    }
    for name, cls in expected.items():
        assert type(cm.make_click_model(name)) is cls
    m = cm.make_click_model(
        "PBM", eta=2.0, curve="eye_tracking", attractiveness={"kind": "binarized", "threshold": 1}
    )
    assert m.examination == cm.EyeTracking(2.0)
    assert m.attractiveness == cm.Binarized(threshold=1)
    assert cm.make_click_model("pbm", examination=[1, 0.5]).propensities(2).tolist() == [1, 0.5]
    assert cm.make_click_model("dbn", gamma=0.7, satisfaction="err").gamma == 0.7
    assert cm.make_click_model("dcm", continuation=[0.2, 0.3]).continuation(2).tolist() == [
        0.2,
        0.3,
    ]
    mat = cm.make_click_model("matrix", path=MATRIX_JSON)
    assert mat.matrix.shape == (5, 10)


def test_factory_rejects_unknown_names_parameters_and_bad_values():
    with pytest.raises(InputError, match="click model must be one of"):
        cm.make_click_model("bandit")
    with pytest.raises(InputError, match="unknown parameter.*'gamma'.*'pbm'"):
        cm.make_click_model("pbm", gamma=0.5)
    with pytest.raises(InputError, match="eta"):
        cm.make_click_model("pbm", eta=-1)
    with pytest.raises(InputError, match="curve"):
        cm.make_click_model("trust", curve="exponential")
    with pytest.raises(InputError, match="gamma"):
        cm.make_click_model("dbn", gamma=1.5)
    with pytest.raises(InputError, match="unknown parameter"):
        cm.make_click_model("sdbn", gamma=0.5)
    with pytest.raises(InputError, match="bad parameters"):
        cm.make_click_model("cascade", attractiveness={"kind": "graded", "epsilon": 0.1})
    with pytest.raises(InputError, match="not both"):
        cm.make_click_model("pbm", examination=[1, 0.5], eta=2)
    with pytest.raises(InputError, match="exactly one of path= or matrix="):
        cm.make_click_model("matrix")


def test_a_utf16_click_matrix_is_named_as_such(tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps({"click_prob": [[0.1, 0.2]]}), encoding="utf-16")
    with pytest.raises(DataFormatError, match="m.json: is UTF-16-encoded"):
        cm.load_click_matrix(bad)


# -- defaults that follow the label range --------------------------------------------------


def test_the_default_threshold_keeps_the_relevant_grades_of_common_scales():
    # 0..4 (Yahoo!, MSLR): grades 3 and 4; 0..2 (MQ2008): 1 and 2; 0..3: 2 and 3; binary: 1
    assert [cm.default_threshold(t) for t in (4, 3, 2, 1, 0)] == [3.0, 2.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("top", [1, 2, 4])
def test_graded_relevance_scales_to_the_top_label_of_the_data(top):
    labels = np.arange(top + 1, dtype=float)
    params, line = cm.relevance_for_labels("pbm", labels)
    model = cm.make_click_model("pbm", **params)
    alpha = model.attractiveness(labels)
    assert alpha[0] == pytest.approx(0.1) and alpha[-1] == pytest.approx(1.0)
    assert f"to 1 at label {top} (labels 0..{top}; the top grade is the largest label)" in line


def test_explicit_values_win_and_are_named_as_given():
    params, line = cm.relevance_for_labels(
        "trust",
        [0, 1, 2],
        relevance="binarized",
        threshold=2,
        eps=0.05,
        names=("--max-label", "--threshold"),
    )
    assert params == {"relevance": {"kind": "binarized", "threshold": 2.0, "eps_minus": 0.05}}
    assert line == "relevance: binarized at label >= 2 (labels 0..2; --threshold given)"
    _, line = cm.relevance_for_labels("pbm", [0, 1], relevance="binarized", threshold=3)
    assert line.endswith("no document reaches it, so every click is noise")


@pytest.mark.parametrize("name", ["dbn", "sdbn"])
def test_dbn_satisfaction_follows_the_labels_or_max_label(name):
    params, line = cm.relevance_for_labels(name, [0, 2, 1])
    model = cm.make_click_model(name, **params)
    assert model.satisfaction == cm.ERRSatisfaction(max_label=2.0)
    assert model.satisfaction(np.array([2.0]))[0] == pytest.approx(0.75)  # (2^2 - 1)/2^2
    params, _ = cm.relevance_for_labels(name, [0, 2, 1], relevance="binarized", max_label=4)
    assert params["satisfaction"] == {"kind": "err", "max_label": 4.0}
    assert "satisfaction" not in cm.relevance_for_labels("cascade", [0, 2])[0]


def test_relevance_for_labels_refuses_what_it_cannot_map():
    with pytest.raises(InputError, match="click model"):
        cm.relevance_for_labels("matrix", [0, 1])
    with pytest.raises(InputError, match="relevance"):
        cm.relevance_for_labels("pbm", [0, 1], relevance="linear")
    with pytest.raises(InputError, match="no labels"):
        cm.relevance_for_labels("pbm", [np.nan])
