"""Tests of clickrank.lambdas: DESIGN §4 worked examples, invariants, references."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clickrank import InputError
from clickrank.lambdas import (
    delta_ndcg,
    idcg,
    lambda_objective,
    lambdas,
    pair_lambdas,
    pair_loss,
    query_blocks,
    ranknet_loss,
)

LABELS = np.array([0, 3, 1, 0, 2, 0], dtype=float)
GAINS = 2.0**LABELS - 1.0
SCORES = np.array([2.5, 2.0, 1.5, 1.0, 0.5, 0.0])
ONE = np.array([0, 6])


# -- DESIGN §4 worked examples -------------------------------------------------


def test_delta_ndcg_of_design_swaps():
    # rows in ranked order: rank-2 label-3 doc with rank 1; with the label-2 doc at rank 5;
    # labels 1 and 2 at ranks 3 and 5.
    got = delta_ndcg(GAINS, ONE, [1, 1, 2], [0, 4, 4])
    assert got == pytest.approx([0.275, 0.104, 0.024], abs=5e-4)


def test_delta_ndcg_matches_ndcg_difference_of_the_swapped_ranking():
    disc = 1.0 / np.log2(np.arange(2, 8))
    base = GAINS @ disc
    swapped = GAINS.copy()
    swapped[[2, 4]] = swapped[[4, 2]]
    ideal = np.sort(GAINS)[::-1] @ disc
    assert delta_ndcg(GAINS, ONE, 2, 4)[0] == pytest.approx(abs(swapped @ disc - base) / ideal)
    assert idcg(GAINS, ONE)[0] == pytest.approx(ideal)


def test_ranknet_forces_of_design_example():
    forces, _ = lambdas(SCORES, GAINS, ONE, weighting="none")
    assert forces == pytest.approx([-2.234, 1.571, 0.182, -1.269, 2.429, -0.679], abs=1.5e-3)


def test_lambdarank_forces_of_design_example():
    forces, _ = lambdas(SCORES, GAINS, ONE)
    assert forces == pytest.approx([-0.383, 0.286, -0.005, -0.052, 0.184, -0.031], abs=1.5e-3)


def test_ranknet_pair_costs_and_forces():
    # misordered 0.5 vs 1.0; ordered by a margin of 2; equal scores
    costs = ranknet_loss([0.5, 1.0, 2.0, 0.0, 1.0, 1.0], [1, 0, 1, 0, 1, 0], [0, 2, 4, 6])
    assert costs == pytest.approx([0.974, 0.127, np.log(2)], abs=5e-4)
    forces, _ = lambdas([0.5, 1.0, 2.0, 0.0], [1, 0, 1, 0], [0, 2, 4], weighting="none")
    assert forces[[0, 2]] == pytest.approx([0.622, 0.119], abs=5e-4)


def test_four_document_forces_at_zero_scores():
    forces, weights = lambdas(
        np.zeros(4), 2.0 ** np.array([3, 1, 2, 2]) - 1, [0, 4], weighting="none"
    )
    assert forces == pytest.approx([1.5, -1.5, 0.0, 0.0])
    assert np.all(weights > 0)
    # LightGBM takes grad = -lambda: the Newton leaf value -sum(grad)/sum(hess) of a leaf
    # holding document 1 alone is +G/H > 0, so document 1 moves up.
    grad, hess = lambdas(
        np.zeros(4), 2.0 ** np.array([3, 1, 2, 2]) - 1, [0, 4], weighting="none"
    ).lightgbm()
    assert -grad[0] / hess[0] > 0


# -- invariants -------------------------------------------------------------------


def _random_queries(rng, n_queries=20, max_len=12, ties=True):
    lens = rng.integers(0, max_len + 1, size=n_queries)
    qptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
    n = int(qptr[-1])
    scores = rng.normal(size=n)
    if ties:
        scores = np.round(scores, 1)  # force ties
    gains = 2.0 ** rng.integers(0, 5, size=n) - 1
    return scores, gains, qptr


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("truncation", [None, 1, 3])
@pytest.mark.parametrize("weighting", ["ndcg", "none"])
def test_forces_of_every_query_sum_to_zero(normalize, truncation, weighting):
    scores, gains, qptr = _random_queries(np.random.default_rng(1))
    f, w = lambdas(
        scores, gains, qptr, normalize=normalize, truncation=truncation, weighting=weighting
    )
    sums = np.bincount(np.repeat(np.arange(len(qptr) - 1), np.diff(qptr)), weights=f)
    assert np.abs(sums).max() < 1e-12
    assert np.all(w >= 0)
    assert np.abs(f).max() > 0


def _reference(scores, gains, qptr, sigma, weighting, truncation, normalize, doc_weights=None):
    """Brute-force per-query, per-pair reference written straight from the formulas."""
    n = len(scores)
    dw = np.ones(n) if doc_weights is None else doc_weights
    forces, weights = np.zeros(n), np.zeros(n)
    for a, b in zip(qptr[:-1], qptr[1:], strict=True):
        s, g, w = scores[a:b], gains[a:b], dw[a:b]
        m = b - a
        if m < 2:
            continue
        order = sorted(range(m), key=lambda r: (-s[r], r))
        rank = {r: k + 1 for k, r in enumerate(order)}
        t = m if truncation is None else truncation
        ideal = sum(v / np.log2(1 + k) for k, v in enumerate(sorted(g, reverse=True)[:t], start=1))
        if weighting == "ndcg" and ideal == 0:
            continue
        flat = max(s) == min(s)
        f, h, total = np.zeros(m), np.zeros(m), 0.0
        for i in range(m):
            for j in range(m):
                if not g[i] > g[j] or min(rank[i], rank[j]) > t:
                    continue
                if weighting == "ndcg":
                    dz = (
                        (g[i] - g[j])
                        * abs(1 / np.log2(1 + rank[i]) - 1 / np.log2(1 + rank[j]))
                        / ideal
                    )
                else:
                    dz = 1.0
                dz *= w[i] * w[j]
                if normalize and not flat:
                    dz /= 0.01 + abs(s[i] - s[j])
                rho = 1 / (1 + np.exp(sigma * (s[i] - s[j])))
                f[i] += sigma * rho * dz
                f[j] -= sigma * rho * dz
                h[i] += sigma**2 * rho * (1 - rho) * dz
                h[j] += sigma**2 * rho * (1 - rho) * dz
                total += 2 * sigma * rho * dz
        scale = np.log2(1 + total) / total if normalize and total > 0 else 1.0
        forces[a:b], weights[a:b] = f * scale, h * scale
    return forces, weights


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    sigma=st.sampled_from([0.5, 1.0, 2.0]),
    weighting=st.sampled_from(["ndcg", "none"]),
    truncation=st.sampled_from([None, 1, 2, 5]),
    normalize=st.booleans(),
)
def test_lambdas_equal_brute_force_reference(seed, sigma, weighting, truncation, normalize):
    scores, gains, qptr = _random_queries(np.random.default_rng(seed), n_queries=6, max_len=8)
    got = lambdas(
        scores,
        gains,
        qptr,
        sigma=sigma,
        weighting=weighting,
        truncation=truncation,
        normalize=normalize,
    )
    ref = _reference(scores, gains, qptr, sigma, weighting, truncation, normalize)
    np.testing.assert_allclose(got.forces, ref[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.weights, ref[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("truncation", [None, 30])
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("weighting", ["ndcg", "none"])
def test_long_queries_equal_brute_force_reference(truncation, normalize, weighting):
    """Queries over 64 documents take the merge-sort path; ties, doc weights and 2 threads."""
    rng = np.random.default_rng(11)
    lengths = np.array([65, 96, 97, 150, 3, 257])  # run boundaries of the merge sort
    qptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(qptr[-1])
    scores = np.round(rng.normal(size=n), 1)  # ties
    gains = 2.0 ** rng.integers(0, 5, size=n) - 1
    w = rng.uniform(0.2, 1.0, n)
    kw = {"weighting": weighting, "truncation": truncation, "normalize": normalize}
    ref = _reference(scores, gains, qptr, 1.5, weighting, truncation, normalize, w)
    for threads in (1, 2):
        got = lambdas(scores, gains, qptr, sigma=1.5, doc_weights=w, n_threads=threads, **kw)
        np.testing.assert_allclose(got.forces, ref[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got.weights, ref[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("truncation", [None, 5])
def test_click_gains_over_rounds_equal_a_fresh_call_and_the_reference(normalize, truncation):
    """Gains that are mostly 0 (clicks: a 0 pairs with the non-zero gains only) over a run
    of rounds (each sorted from the last round's order, ties included): every round equals a
    fresh call to the bit and the brute-force reference."""
    rng = np.random.default_rng(5)
    lengths = np.concatenate([rng.integers(1, 65, size=40), [80, 130]])  # both sort paths
    qptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n = int(qptr[-1])
    gains = np.where(rng.random(n) < 0.15, rng.uniform(0.5, 3.0, n), 0.0)
    gains[qptr[5] : qptr[6]] = rng.uniform(0.5, 3.0, lengths[5])  # and one dense query
    kw = {"truncation": truncation, "normalize": normalize}
    fobj = lambda_objective(gains, qptr, **kw)
    scores = np.zeros(n)
    for _ in range(6):
        scores = scores + np.round(rng.normal(scale=0.3, size=n), 1)  # a round's change, ties
        grad, hess = fobj(scores, None)
        fresh = lambdas(scores, gains, qptr, **kw)
        assert np.array_equal(grad, (-fresh.forces).astype(np.float32))
        assert np.array_equal(hess, fresh.weights.astype(np.float32))
        ref = _reference(scores, gains, qptr, 1.0, "ndcg", truncation, normalize)
        np.testing.assert_allclose(fresh.forces, ref[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(fresh.weights, ref[1], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("cnt", [0, 1, 7, 8, 9, 16, 24, 31, 64, 65, 100, 128, 129, 256, 1000])
def test_merge_order_is_the_stable_descending_argsort(cnt):
    from clickrank.lambdas import _merge_order_desc

    rng = np.random.default_rng(cnt)
    for s in (rng.normal(size=cnt), np.round(rng.normal(size=cnt), 1), np.zeros(cnt),
              np.round(rng.normal(size=cnt))):  # fmt: skip
        bufs = [np.empty(cnt + 2, np.int64), np.empty(cnt + 2, np.int64)]
        keys = [np.empty(cnt + 2), np.empty(cnt + 2)]
        _merge_order_desc(s, cnt, bufs[0], bufs[1], keys[0], keys[1])
        assert np.array_equal(bufs[0][:cnt], np.argsort(-s, kind="mergesort"))


@pytest.mark.parametrize("cnt", [0, 1, 2, 7, 33, 64])
def test_a_sort_from_any_order_is_the_stable_descending_argsort(cnt):
    from clickrank.lambdas import _warm_order_desc

    rng = np.random.default_rng(cnt)
    for s in (rng.normal(size=cnt), np.round(rng.normal(size=cnt), 1), np.zeros(cnt)):
        for start in (np.arange(cnt), rng.permutation(cnt), np.arange(cnt)[::-1].copy()):
            order = start.astype(np.int64)
            _warm_order_desc(s, cnt, order)
            assert np.array_equal(order, np.argsort(-s, kind="mergesort"))


def test_idcg_of_short_and_long_queries():
    rng = np.random.default_rng(3)
    qptr = np.concatenate([[0], np.cumsum([5, 64, 65, 300])])
    gains = 2.0 ** rng.integers(0, 5, size=qptr[-1]) - 1
    for k in (None, 10):
        want = []
        for a, b in zip(qptr[:-1], qptr[1:], strict=True):
            top = np.sort(gains[a:b])[::-1][:k]
            want.append(np.sum(top / np.log2(np.arange(2, len(top) + 2))))
        np.testing.assert_allclose(idcg(gains, qptr, k=k), want, rtol=1e-14)


def _finite_difference(loss, s, eps=1e-6):
    grad = np.empty_like(s)
    for k in range(len(s)):
        up, down = s.copy(), s.copy()
        up[k] += eps
        down[k] -= eps
        grad[k] = (loss(up) - loss(down)) / (2 * eps)
    return grad


@pytest.mark.parametrize("sigma", [0.7, 1.0, 2.5])
def test_ranknet_forces_are_minus_the_loss_gradient(sigma):
    scores, gains, qptr = _random_queries(
        np.random.default_rng(7), n_queries=5, max_len=7, ties=False
    )
    f, w = lambdas(scores, gains, qptr, sigma=sigma, weighting="none")
    fd = _finite_difference(lambda s: ranknet_loss(s, gains, qptr, sigma=sigma).sum(), scores)
    np.testing.assert_allclose(-f, fd, atol=1e-6)
    # Newton weights: the diagonal of the hessian, by differencing the forces
    diag = np.empty_like(scores)
    eps = 1e-5
    for k in range(len(scores)):
        up, down = scores.copy(), scores.copy()
        up[k] += eps
        down[k] -= eps
        fu = lambdas(up, gains, qptr, sigma=sigma, weighting="none").forces[k]
        fdn = lambdas(down, gains, qptr, sigma=sigma, weighting="none").forces[k]
        diag[k] = -(fu - fdn) / (2 * eps)
    np.testing.assert_allclose(w, diag, atol=1e-6)


# -- pairwise mode ------------------------------------------------------------------


def _all_pairs(gains, qptr):
    pairs = []
    for a, b in zip(qptr[:-1], qptr[1:], strict=True):
        for i in range(a, b):
            for j in range(a, b):
                if gains[i] > gains[j]:
                    pairs.append((i, j))
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("truncation", [None, 3])
@pytest.mark.parametrize("weighting", ["none", "ndcg"])
def test_pair_mode_with_all_label_pairs_equals_gain_mode(weighting, truncation, normalize):
    scores, gains, qptr = _random_queries(np.random.default_rng(3), n_queries=8, max_len=9)
    pairs = _all_pairs(gains, qptr)
    got = pair_lambdas(
        scores,
        pairs,
        qptr,
        gains=gains,
        weighting=weighting,
        truncation=truncation,
        normalize=normalize,
    )
    want = lambdas(
        scores, gains, qptr, weighting=weighting, truncation=truncation, normalize=normalize
    )
    np.testing.assert_allclose(got.forces, want.forces, atol=1e-12)
    np.testing.assert_allclose(got.weights, want.weights, atol=1e-12)


def test_pair_forces_are_minus_the_weighted_pair_loss_gradient():
    rng = np.random.default_rng(11)
    scores, _, qptr = _random_queries(rng, n_queries=4, max_len=6, ties=False)
    q = np.repeat(np.arange(len(qptr) - 1), np.diff(qptr))
    i = rng.integers(0, len(scores), size=30)
    j = np.array([rng.integers(qptr[q[r]], qptr[q[r] + 1]) for r in i])
    pairs = np.column_stack([i, j])
    c = rng.uniform(0.1, 3.0, size=len(pairs))
    f, w = pair_lambdas(scores, pairs, qptr, pair_weights=c, sigma=1.3)
    fd = _finite_difference(
        lambda s: pair_loss(s, pairs, qptr, pair_weights=c, sigma=1.3).sum(), scores
    )
    np.testing.assert_allclose(-f, fd, atol=1e-6)
    assert np.all(w >= 0)


def test_pair_mode_rejects_pairs_across_queries():
    with pytest.raises(InputError, match="different queries"):
        pair_lambdas(np.zeros(4), [[0, 3]], [0, 2, 4])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"gains": [1.0, -1.0]}, "non-negative"),
        ({"scores": [0.0, np.nan]}, "finite"),
        ({"qptr": [0, 3]}, "qptr"),
        ({"sigma": 0.0}, "sigma"),
        ({"truncation": 0}, "truncation"),
        ({"weighting": "err"}, "weighting"),
    ],
)
def test_bad_inputs_raise_clear_errors(kwargs, match):
    args = {"scores": [0.0, 1.0], "gains": [1.0, 0.0], "qptr": [0, 2]}
    extra = {k: v for k, v in kwargs.items() if k not in args}
    args.update({k: v for k, v in kwargs.items() if k in args})
    with pytest.raises(InputError, match=match):
        lambdas(args["scores"], args["gains"], args["qptr"], **extra)


def test_queries_without_gain_get_no_force():
    f, w = lambdas([1.0, 0.0, 0.5, 0.2], [0.0, 0.0, 1.0, 0.0], [0, 2, 4])
    assert np.all(f[:2] == 0) and np.all(w[:2] == 0)
    assert f[2] > 0 > f[3]


@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("truncation", [None, 5])
@pytest.mark.parametrize("weighted", [False, True])
def test_threads_give_the_same_bits(normalize, truncation, weighted):
    """Blocks of queries on two threads write the rows one thread writes, bit for bit
    (queries of 1 to 200 documents: both the insertion-sort and the argsort path)."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(1, 200, size=300)
    qptr = np.concatenate([[0], np.cumsum(lengths)])
    n = int(qptr[-1])
    gains = np.exp2(rng.integers(0, 5, n)) - 1
    scores = np.round(rng.standard_normal(n), 1)  # ties
    w = rng.uniform(0.1, 1.0, n) if weighted else None
    kw = {"truncation": truncation, "normalize": normalize, "doc_weights": w}
    one = lambdas(scores, gains, qptr, **kw)
    two = lambdas(scores, gains, qptr, n_threads=2, **kw)
    assert np.array_equal(one.forces, two.forces) and np.array_equal(one.weights, two.weights)
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        grad, hess = lambda_objective(gains, qptr, n_threads=2, **kw)(scores, None)
        assert numba.get_num_threads() == 1  # the caller's thread count is restored
    finally:
        numba.set_num_threads(before)
    assert grad.dtype == hess.dtype == np.float32  # what LightGBM casts to, without a copy
    assert np.array_equal(grad, (-one.forces).astype(np.float32))
    assert np.array_equal(hess, one.weights.astype(np.float32))


def test_query_blocks_split_the_pair_work():
    qptr = np.concatenate([[0], np.cumsum([1000] + [10] * 100)])
    b = query_blocks(qptr, 30, 4)
    assert b[0] == 0 and b[-1] == 101 and np.all(np.diff(b) > 0)
    assert b[1] == 1  # the one long query is a block of its own


def test_objective_rejects_non_finite_scores():
    fobj = lambda_objective([0.0, 1.0], [0, 2])
    with pytest.raises(InputError, match="finite"):
        fobj(np.array([np.nan, 0.0]), None)
