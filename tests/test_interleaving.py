"""Properties of the interleaving methods (lists, credit, probabilities, LP constraints)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from clickrank import InputError
from clickrank.interleaving import (
    METHODS,
    balanced,
    interleave,
    optimized,
    probabilistic,
    probabilistic_list_probability,
    rankings_from_scores,
    solve_optimized,
    team_draft,
    team_draft_multileave,
)


def random_rankings(n_queries=40, n_docs=12, seed=0):
    rng = np.random.default_rng(seed)
    ra = np.argsort(rng.random((n_queries, n_docs)), axis=1)
    rb = np.argsort(rng.random((n_queries, n_docs)), axis=1)
    return ra, rb


def test_rankings_from_scores_sorts_descending_with_stable_ties_and_pads():
    r = rankings_from_scores(np.array([1.0, 3.0, 3.0, 0.0, 5.0]), np.array([0, 4, 5]))
    assert r.tolist() == [[1, 2, 0, 3], [0, -1, -1, -1]]


def test_team_draft_lists_hold_each_document_once_and_replay_as_a_valid_draft():
    ra, rb = random_rankings()
    q = np.repeat(np.arange(ra.shape[0]), 25)
    res = team_draft(ra, rb, k=10, query=q, seed=3)
    lists, team = res.lists, res.team
    assert (lists >= 0).all()
    srt = np.sort(lists, axis=1)
    assert not (srt[:, 1:] == srt[:, :-1]).any()
    for s in range(0, len(q), 7):  # replay a sample of impressions against Algorithm 1
        used, na, nb = set(), 0, 0
        for j in range(10):
            t = team[s, j]
            assert (t == 0 and na <= nb) or (t == 1 and nb <= na)
            src = ra if t == 0 else rb
            expected = next(d for d in src[q[s]] if d not in used)
            assert lists[s, j] == expected
            used.add(expected)
            na, nb = na + (t == 0), nb + (t == 1)
            assert abs(na - nb) <= 1


def test_same_seed_same_lists_and_batches_do_not_matter():
    ra, rb = random_rankings()
    q = np.arange(ra.shape[0])
    full = team_draft(ra, rb, query=q, seed=5).lists
    again = team_draft(ra, rb, query=q, seed=5).lists
    np.testing.assert_array_equal(full, again)
    assert not np.array_equal(full, team_draft(ra, rb, query=q, seed=6).lists)


@pytest.mark.parametrize("method", ["team-draft", "balanced", "probabilistic"])
def test_credit_is_antisymmetric_when_a_and_b_swap_with_mirrored_coins(method):
    ra, rb = random_rankings(seed=1)
    q = np.repeat(np.arange(ra.shape[0]), 10)
    rng = np.random.default_rng(2)
    n_u = {"balanced": 1, "team-draft": 10, "probabilistic": 20}[method]
    u = rng.random((len(q), n_u))
    u[u == 0.5] = 0.25
    mirrored = u.copy()
    coin_cols = slice(0, None, 2) if method == "probabilistic" else slice(None)
    mirrored[:, coin_cols] = 1.0 - u[:, coin_cols]
    mirrored[mirrored >= 1.0] = 0.999999
    ab = interleave(method, ra, rb, query=q, u=u)
    ba = interleave(method, rb, ra, query=q, u=mirrored)
    np.testing.assert_array_equal(ab.lists, ba.lists)
    clicks = rng.random(ab.lists.shape) < 0.3
    np.testing.assert_allclose(ab.credit(clicks), -ba.credit(clicks), atol=1e-12)
    np.testing.assert_array_equal(ab.outcome(clicks), -ba.outcome(clicks))


def test_optimized_credit_is_antisymmetric_on_the_same_lists():
    ra, rb = random_rankings(n_queries=5, n_docs=8, seed=4)
    ab = optimized(ra, rb, k=5, seed=1)
    ba = solve_optimized(rb, ra, k=5)
    np.testing.assert_array_equal(np.sort(ba.lists, axis=0), np.sort(ab.distribution.lists, axis=0))
    np.testing.assert_allclose(np.sort(ba.delta.ravel()), np.sort(-ab.distribution.delta.ravel()))


@pytest.mark.parametrize("tau", [1.0, 3.0])
def test_probabilistic_list_probabilities_sum_to_one_over_all_lists(tau):
    ra = np.array([[2, 0, 3, 1]])
    rb = np.array([[0, 1, 2, 3]])
    lists = np.array(list(itertools.permutations(range(4), 3)))
    p = probabilistic_list_probability(ra, rb, lists, tau=tau)
    assert p.min() > 0
    assert p.sum() == pytest.approx(1.0, abs=1e-12)


def test_probabilistic_sampling_frequencies_match_list_probabilities():
    ra = np.array([[2, 0, 3, 1]])
    rb = np.array([[0, 1, 2, 3]])
    n = 40_000
    res = probabilistic(ra, rb, k=2, query=np.zeros(n, np.int64), seed=9)
    codes = res.lists[:, 0] * 4 + res.lists[:, 1]
    freq = np.bincount(codes, minlength=16) / n
    lists = np.array([(a, b) for a in range(4) for b in range(4)])
    p = np.where(lists[:, 0] != lists[:, 1], probabilistic_list_probability(ra, rb, lists), 0.0)
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(freq - p) <= 4 * se + 1e-12)


def test_probabilistic_posterior_and_expected_outcome_by_enumeration():
    ra, rb = random_rankings(n_queries=3, n_docs=6, seed=8)
    res = probabilistic(ra, rb, k=4, seed=2)
    rng = np.random.default_rng(0)
    clicks = rng.random((3, 4)) < 0.6
    post = res.assignment_posterior()
    expected = np.zeros(3)
    for s in range(3):  # brute force over the 2^4 assignments
        for a in itertools.product([0, 1], repeat=4):
            a = np.array(a)
            pa = np.prod(np.where(a == 0, post[s], 1 - post[s]))
            score = np.sum(np.where(clicks[s], np.where(a == 0, 1, -1), 0))
            expected[s] += pa * np.sign(score)
    np.testing.assert_allclose(res.credit(clicks), expected, atol=1e-12)


def test_optimized_lp_solution_satisfies_its_constraints():
    ra, rb = random_rankings(n_queries=8, n_docs=15, seed=6)
    dist = solve_optimized(ra, rb, k=6)
    for q in range(8):
        sl = slice(dist.lptr[q], dist.lptr[q + 1])
        p, lists, delta = dist.prob[sl], dist.lists[sl], dist.delta[sl]
        assert p.min() >= 0
        assert p.sum() == pytest.approx(1.0, abs=1e-9)
        bias = np.cumsum(delta, axis=1).T @ p  # random top-i clicker gets no expected credit
        assert np.abs(bias).max() <= 1e-7
        assert not dist.relaxed[q]
        for lst in lists:  # each prefix is the union of a prefix of A and a prefix of B
            for i in range(1, 7):
                pre = set(lst[:i])
                ok = any(
                    pre == set(ra[q, :x]) | set(rb[q, :y])
                    for x in range(i + 1)
                    for y in range(i + 1)
                )
                assert ok


def test_optimized_samples_lists_with_the_lp_probabilities():
    ra, rb = random_rankings(n_queries=2, n_docs=6, seed=3)
    n = 30_000
    q = np.repeat([0, 1], n // 2)
    res = optimized(ra, rb, k=4, query=q, seed=4)
    dist = res.distribution
    for qq in (0, 1):
        sl = slice(dist.lptr[qq], dist.lptr[qq + 1])
        shown = res.lists[q == qq]
        for lst, p in zip(dist.lists[sl], dist.prob[sl], strict=True):
            f = np.mean((shown == lst).all(axis=1))
            assert abs(f - p) <= 4 * np.sqrt(p * (1 - p) / (n // 2)) + 1e-9


def test_balanced_interleaving_bias_case_prefers_b_two_thirds_under_random_clicks():
    a, b = np.array([[0, 1, 2]]), np.array([[1, 2, 0]])
    res = balanced(a, b, k=3, query=np.zeros(2, np.int64), u=np.array([[0.1], [0.9]]))
    outcomes = []
    for s in range(2):  # a user clicking one result uniformly at random
        for j in range(3):
            c = np.zeros((2, 3), bool)
            c[s, j] = True
            outcomes.append(res.outcome(c)[s])
    assert np.mean(np.array(outcomes) == -1) == pytest.approx(2 / 3)
    td = team_draft(a, b, k=3, query=np.zeros(2000, np.int64), seed=0)
    rng = np.random.default_rng(1)
    c = np.zeros((2000, 3), bool)
    c[np.arange(2000), rng.integers(0, 3, 2000)] = True
    o = td.outcome(c)
    assert abs(o.mean()) <= 4 * o.std() / np.sqrt(2000)


def test_identical_rankers_tie_under_balanced_and_optimized():
    ra, _ = random_rankings(seed=2)
    rng = np.random.default_rng(0)
    for method in ("balanced", "optimized"):
        res = interleave(method, ra, ra, k=5)
        clicks = rng.random(res.lists.shape) < 0.5
        assert (res.outcome(clicks) == 0).all()


def test_multileave_lists_are_unique_and_teams_balanced():
    rng = np.random.default_rng(0)
    rankings = [np.argsort(rng.random((10, 15)), axis=1) for _ in range(4)]
    res = team_draft_multileave(rankings, k=10, query=np.repeat(np.arange(10), 20), seed=1)
    srt = np.sort(res.lists, axis=1)
    assert not (srt[:, 1:] == srt[:, :-1]).any()
    counts = np.stack([(res.team == r).sum(axis=1) for r in range(4)], axis=1)
    assert (counts.max(axis=1) - counts.min(axis=1) <= 1).all()
    clicks = rng.random(res.lists.shape) < 0.3
    w = res.wins(clicks)
    assert np.all(np.diag(w) == 0)
    pref = res.preference(clicks)
    np.testing.assert_allclose(pref, -pref.T)


def test_identical_rankers_multileave_preference_is_near_zero():
    r = np.argsort(np.random.default_rng(0).random((30, 12)), axis=1)
    n = 20_000
    res = team_draft_multileave([r, r, r], k=10, query=np.arange(n) % 30, seed=2)
    clicks = np.random.default_rng(3).random(res.lists.shape) < 0.2
    pref = res.preference(clicks)
    assert np.abs(pref).max() <= 4 * 0.5 / np.sqrt(n)


def test_bad_inputs_raise_clear_errors():
    ra, rb = random_rankings()
    with pytest.raises(InputError, match="same queries"):
        team_draft(ra, rb[:3])
    with pytest.raises(InputError, match="twice"):
        team_draft(np.array([[0, 0, 1]]), np.array([[0, 1, 2]]))
    with pytest.raises(InputError, match="query indices"):
        team_draft(ra, rb, query=np.array([99]))
    with pytest.raises(InputError, match="method"):
        interleave("zipper", ra, rb)
    with pytest.raises(InputError, match="u must"):
        team_draft(ra, rb, u=np.full((ra.shape[0], 10), 1.5))
    assert set(METHODS) == {"balanced", "team-draft", "probabilistic", "optimized"}


def test_team_draft_stops_when_one_ranking_runs_out_as_in_algorithm_1():
    # Radlinski, Kurup & Joachims 2008, Alg. 1: draft while both rankings have a free document
    a = np.array([[0, -1, -1, -1]])
    b = np.array([[1, 2, 3, 0]])
    u = np.array([[0.2, 0.9, 0.9, 0.9], [0.8, 0.9, 0.9, 0.9]])  # A first; B first
    res = team_draft(a, b, k=4, query=np.zeros(2, np.int64), u=u)
    assert res.lists.tolist() == [[0, -1, -1, -1], [1, 0, -1, -1]]
    assert res.team.tolist() == [[0, -1, -1, -1], [1, 0, -1, -1]]
    # B's later documents 2, 3 never enter the list, so they cannot earn B credit
    clicks = np.zeros((2, 4), bool)
    clicks[:, 1] = True
    assert res.credit(clicks).tolist() == [0.0, 1.0]
