"""Debiased pairwise learning: the session kernel, the bias update, the three targets, subsets."""

from __future__ import annotations

import json
import math

import numpy as np
import polars as pl
import pytest

from clickrank import DataFormatError, InputError, LogSchemaError, RankingData
from clickrank.clickmodels import make_click_model
from clickrank.datasets import synthetic
from clickrank.lambdamart import LambdaMART
from clickrank.lambdas import (
    SessionStep,
    _list_blocks,
    lambdas,
    position_bias_update,
    session_lambdas,
)
from clickrank.objectives import lambdamart_objective
from clickrank.policies import UniformRandom
from clickrank.simulation import simulate
from clickrank.targets import (
    SessionLists,
    Target,
    ips,
    ips_rank_pairs,
    oracle,
    propensity_ratio_pairs,
    unbiased_lambdamart,
)

EPS = np.finfo(float).eps

# -- the kernel against a brute-force reference ------------------------------------------


def _reference(scores, rows, sptr, pos, clicks, counts, tp, tm, sigma, trunc, normalize, cost):
    """Unbiased LambdaMART forces, weights and accumulators, pair by pair in plain Python."""
    n, k = len(scores), len(tp)
    forces, weights, li, lj = np.zeros(n), np.zeros(n), np.zeros(k), np.zeros(k)
    for u in range(len(sptr) - 1):
        idx = list(range(sptr[u], sptr[u + 1]))
        s = [scores[rows[e]] for e in idx]
        c = [bool(clicks[e]) for e in idx]
        p = [int(pos[e]) - 1 for e in idx]
        m = sum(c)
        if m in (0, len(c)):
            continue
        order = sorted(range(len(s)), key=lambda r: (-s[r], r))  # stable, descending
        rank = {r: i for i, r in enumerate(order)}

        def disc(i):
            return 1.0 / math.log2(2.0 + i)

        idcg = sum(disc(i) for i in range(min(m, trunc)))
        flat = max(s) == min(s)
        f, h, total = np.zeros(len(s)), np.zeros(len(s)), 0.0
        for a in range(len(s)):
            for b in range(len(s)):
                if not c[a] or c[b] or min(rank[a], rank[b]) >= trunc:
                    continue
                dz = abs(disc(rank[a]) - disc(rank[b])) / idcg
                ds = s[a] - s[b]
                if normalize and not flat:
                    dz /= 0.01 + abs(ds)
                rho = 1.0 / (1.0 + math.exp(sigma * ds))
                y = sigma * ds if cost == "xgboost" else -sigma * ds
                cost_ab = dz * math.log1p(math.exp(y))
                tracked = p[a] < k and p[b] < k
                scale = 1.0
                if tracked and tp[p[a]] >= EPS and tm[p[b]] >= EPS:
                    scale = 1.0 / (tp[p[a]] * tm[p[b]])
                lam = sigma * rho * dz * scale
                f[a] += lam
                f[b] -= lam
                h[a] += sigma * sigma * rho * (1 - rho) * dz * scale
                h[b] += sigma * sigma * rho * (1 - rho) * dz * scale
                total += 2 * lam
                if tracked and tm[p[b]] >= EPS:
                    li[p[a]] += counts[u] * cost_ab / tm[p[b]]
                if tracked and tp[p[a]] >= EPS:
                    lj[p[b]] += counts[u] * cost_ab / tp[p[a]]
        factor = counts[u] * (math.log2(1 + total) / total if normalize and total > 0 else 1.0)
        for r, e in enumerate(idx):
            forces[rows[e]] += factor * f[r]
            weights[rows[e]] += factor * h[r]
    return forces, weights, li, lj


def _random_sessions(seed: int, n_rows: int = 14, n_sessions: int = 30):
    """Random sessions over a few rows: lists of 1-7 distinct rows, tied scores, 5 biases."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(1, 8, size=n_sessions)
    rows = np.concatenate([rng.choice(n_rows, size=m, replace=False) for m in lens])
    sptr = np.concatenate([[0], np.cumsum(lens)])
    pos = np.concatenate([np.arange(1, m + 1) for m in lens])
    clicks = rng.random(rows.size) < 0.4
    counts = rng.integers(1, 5, size=n_sessions).astype(float)
    scores = np.round(rng.normal(size=n_rows), 1)  # some ties
    scores[:3] = 0.5
    tp = rng.uniform(0.2, 1.5, size=5)
    tm = rng.uniform(0.5, 2.0, size=5)
    tm[3] = 0.0  # a zero bias turns the scaling of its pairs off
    return scores, rows, sptr, pos, clicks, counts, tp, tm


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    ("trunc", "normalize", "cost", "sigma"),
    [
        (None, False, "ranknet", 1.0),
        (3, True, "ranknet", 1.0),
        (None, True, "xgboost", 0.7),
        (2, False, "xgboost", 2.0),
    ],
)
def test_session_lambdas_equal_brute_force(seed, trunc, normalize, cost, sigma):
    scores, rows, sptr, pos, clicks, counts, tp, tm = _random_sessions(seed)
    got = session_lambdas(
        scores,
        rows,
        sptr,
        pos,
        clicks,
        counts,
        t_plus=tp,
        t_minus=tm,
        sigma=sigma,
        truncation=trunc,
        normalize=normalize,
        cost=cost,
    )
    want = _reference(
        scores,
        rows,
        sptr,
        pos,
        clicks,
        counts,
        tp,
        tm,
        sigma,
        10**9 if trunc is None else trunc,
        normalize,
        cost,
    )
    for g, w, name in zip(got, want, ("forces", "weights", "li", "lj"), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=name)
    assert np.any(got.li > 0) and np.any(got.forces != 0)


def _list_sessions(seed: int, n_queries: int = 12, docs: int = 12, shown: int = 8):
    """Sessions as a SessionLists holds them: per query a few lists (the same rows, a swap
    of rank 1, a shorter list), each with several click patterns; one list of 80 rows."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n_queries):
        base = q * docs + rng.permutation(docs)[:shown]
        for variant in range(4):
            lst = base.copy()
            if variant == 1:
                j = rng.integers(1, shown)
                lst[[0, j]] = lst[[j, 0]]
            if variant == 2:
                lst = lst[: shown - 2]
            for _ in range(rng.integers(1, 5)):
                out.append((lst, rng.random(lst.size) < 0.35))
    long = n_queries * docs + np.arange(80)  # a long list (sorted by score another way)
    out += [(long, rng.random(80) < 0.2) for _ in range(2)]
    out.sort(key=lambda e: (tuple(e[0]), tuple(e[1])))
    rows = np.concatenate([e[0] for e in out])
    sptr = np.concatenate([[0], np.cumsum([e[0].size for e in out])])
    pos = np.concatenate([np.arange(1, e[0].size + 1) for e in out])
    clicks = np.concatenate([e[1] for e in out])
    counts = rng.integers(1, 4, size=len(out)).astype(float)
    scores = np.round(rng.normal(size=n_queries * docs + 80), 1)  # ties
    return scores, rows, sptr, pos, clicks, counts


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    ("trunc", "normalize", "cost"),
    [(None, True, "ranknet"), (3, True, "xgboost"), (30, False, "ranknet")],
)
def test_session_lambdas_of_repeated_lists_equal_brute_force(seed, trunc, normalize, cost):
    """Lists shown in many sessions (the kernel tabulates them once) and rows shared across
    lists (cached pair terms): the same forces, weights and bias sums as pair by pair."""
    scores, rows, sptr, pos, clicks, counts = _list_sessions(seed)
    rng = np.random.default_rng(seed + 10)
    tp, tm = rng.uniform(0.3, 1.5, size=6), rng.uniform(0.5, 2.0, size=6)
    got = session_lambdas(
        scores, rows, sptr, pos, clicks, counts, t_plus=tp, t_minus=tm,
        truncation=trunc, normalize=normalize, cost=cost,
    )  # fmt: skip
    want = _reference(
        scores, rows, sptr, pos, clicks, counts, tp, tm, 1.0,
        10**9 if trunc is None else trunc, normalize, cost,
    )  # fmt: skip
    for g, w, name in zip(got, want, ("forces", "weights", "li", "lj"), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("normalize", [False, True])
def test_row_sets_and_threads_keep_the_bits_of_one_list_at_a_time(normalize):
    """Lists that show the same rows in other orders share their set's pair terms when the
    set's scores are distinct (else each list orders its own ties), and two threads split
    the lists where no row is shared: each gives the bits of the per-list path on one
    thread, and the brute force's values."""
    scores, rows, sptr, pos, clicks, counts = _list_sessions(2)
    rng = np.random.default_rng(3)
    tp, tm = rng.uniform(0.3, 1.5, size=6), rng.uniform(0.5, 2.0, size=6)
    kw = dict(n_rows=scores.size, truncation=5, normalize=normalize)
    one = SessionStep(rows, sptr, pos, clicks, counts, **kw)
    two = SessionStep(rows, sptr, pos, clicks, counts, n_threads=2, **kw)
    apart = SessionStep(rows, sptr, pos, clicks, counts, **kw)
    apart._arrays[18][:] = False  # no row set shared: every list on its own
    assert one._arrays[18].any() and two._blocks[1].size > 2  # shared sets, several blocks
    distinct = scores + rng.normal(scale=1e-3, size=scores.size)
    for s in (scores, distinct):  # ties (some sets ordered per list), then none
        want = apart(s, tp, tm)
        for step in (one, two):
            got = step(s, tp, tm)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)
        ref = _reference(s, rows, sptr, pos, clicks, counts, tp, tm, 1.0, 5, normalize,
                         "ranknet")  # fmt: skip
        for g, w in zip(got, ref, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    assert one._set_state.sum() == one._arrays[18].sum()  # distinct scores: every set shared
    # only a shared set has slots (a Plackett-Luce log has a set per list: no memory for them)
    sizes, shared = np.diff(one._arrays[16]), one._arrays[18]
    assert not shared.all() and one._set_terms.shape[0] == (sizes[shared] ** 2).sum()


def test_list_blocks_cut_only_between_lists_that_share_no_row():
    # lists 0-1 share rows 0..9, list 2 reaches back into them, lists 3-5 are apart
    row_min = np.array([0, 2, 5, 20, 30, 40])
    row_max = np.array([9, 8, 12, 25, 35, 45])
    bounds = _list_blocks(np.ones(6), row_min, row_max, 6)
    assert bounds.tolist() == [0, 3, 4, 5, 6]
    assert _list_blocks(np.ones(3), np.zeros(3, int), np.full(3, 9), 4).tolist() == [0, 3]


def test_aggregated_sessions_give_the_lambdas_of_the_repeated_sessions():
    """A session with count n gives the lambdas of n copies of it with count 1."""
    scores, rows, sptr, pos, clicks, counts = _list_sessions(5)
    sizes = np.diff(sptr)
    reps = counts.astype(int)
    copy = np.repeat(np.arange(sizes.size), reps)
    idx = np.concatenate([np.arange(sptr[u], sptr[u + 1]) for u in copy])
    sptr_rep = np.concatenate([[0], np.cumsum(sizes[copy])])
    tp, tm = np.linspace(1.0, 0.4, 6), np.linspace(1.0, 0.7, 6)
    for normalize in (False, True):
        agg = session_lambdas(
            scores, rows, sptr, pos, clicks, counts, t_plus=tp, t_minus=tm, normalize=normalize
        )
        rep = session_lambdas(
            scores, rows[idx], sptr_rep, pos[idx], clicks[idx], t_plus=tp, t_minus=tm,
            normalize=normalize,
        )  # fmt: skip
        for a, b in zip(agg, rep, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_forces_of_every_session_sum_to_zero():
    scores, rows, sptr, pos, clicks, counts, tp, tm = _random_sessions(7, n_rows=200)
    rows = np.arange(rows.size)  # one row per entry: a session's forces stay apart
    scores = np.random.default_rng(1).normal(size=rows.size)
    f, w, _, _ = session_lambdas(
        scores, rows, sptr, pos, clicks, counts, t_plus=tp, t_minus=tm, truncation=4, normalize=True
    )
    per_session = np.add.reduceat(f, sptr[:-1])
    np.testing.assert_allclose(per_session, 0.0, atol=1e-12)
    mixed = np.add.reduceat(clicks.astype(int), sptr[:-1])
    has_pairs = (mixed > 0) & (mixed < np.diff(sptr))
    assert np.all(np.add.reduceat(w, sptr[:-1])[has_pairs] > 0)
    assert np.all(np.add.reduceat(np.abs(f), sptr[:-1])[~has_pairs] == 0)


def test_forces_are_minus_the_gradient_of_the_bias_weighted_loss():
    """Without normalisation: d/ds of sum_u n_u sum_pairs dZ C_ij / (t+ t-), ranks held fixed."""
    scores, rows, sptr, pos, clicks, counts, _, _ = _random_sessions(3)
    scores = scores + np.random.default_rng(0).normal(scale=1e-3, size=scores.size)  # no ties

    ones = np.ones(int(pos.max()))  # every position tracked

    def loss(s):  # li sums n_u dZ C / t- over the pairs: with unit biases, the weighted loss
        return session_lambdas(
            s, rows, sptr, pos, clicks, counts, t_plus=ones, t_minus=ones, cost="ranknet"
        ).li.sum()

    f, w, _, _ = session_lambdas(scores, rows, sptr, pos, clicks, counts, t_plus=ones, t_minus=ones)
    step = 1e-6
    for r in range(scores.size):
        up, down = scores.copy(), scores.copy()
        up[r] += step
        down[r] -= step
        grad = (loss(up) - loss(down)) / (2 * step)
        assert -grad == pytest.approx(f[r], rel=1e-5, abs=1e-7)
    assert np.all(w >= 0)


def test_with_one_session_per_query_and_unit_biases_they_are_lambdarank_on_clicks():
    """A query shown whole once, biases 1: LambdaRank with binary click gains (lambdas())."""
    rng = np.random.default_rng(4)
    qptr = np.array([0, 5, 12, 20, 23])
    n = qptr[-1]
    clicks = rng.random(n) < 0.4
    scores = rng.normal(size=n)
    pos = np.concatenate([np.arange(1, m + 1) for m in np.diff(qptr)])
    for trunc in (None, 3):
        got = session_lambdas(
            scores, np.arange(n), qptr, pos, clicks, truncation=trunc, normalize=True
        )
        want = lambdas(scores, clicks.astype(float), qptr, truncation=trunc, normalize=True)
        np.testing.assert_allclose(got.forces, want.forces, atol=1e-12)
        np.testing.assert_allclose(got.weights, want.weights, atol=1e-12)


def test_session_lambdas_errors_name_the_argument():
    scores, rows, sptr, pos, clicks, counts, tp, tm = _random_sessions(0)
    with pytest.raises(InputError, match="sptr"):
        session_lambdas(scores, rows, sptr[:-1], pos, clicks)
    with pytest.raises(InputError, match="rows"):
        session_lambdas(scores[:3], rows, sptr, pos, clicks)
    with pytest.raises(InputError, match="1-based"):
        session_lambdas(scores, rows, sptr, pos - 1, clicks)
    with pytest.raises(InputError, match="t_minus"):
        session_lambdas(scores, rows, sptr, pos, clicks, t_plus=tp, t_minus=tm[:2])
    with pytest.raises(InputError, match="cost"):
        session_lambdas(scores, rows, sptr, pos, clicks, cost="hinge")


# -- the bias update --------------------------------------------------------------------------


def test_position_bias_update_is_the_regularised_ratio():
    li, lj = np.array([4.0, 1.0, 0.25, 0.0]), np.array([2.0, 8.0, 2.0, 18.0])
    tp, tm = position_bias_update(li, lj, bias_norm=1.0)
    np.testing.assert_allclose(tp, [1.0, 0.5, 0.25, 0.0])
    np.testing.assert_allclose(tm, [1.0, 2.0, 1.0, 3.0])
    tp0, _ = position_bias_update(li, lj, bias_norm=0.0)  # no regularisation: the ratios
    np.testing.assert_allclose(tp0, [1.0, 0.25, 0.0625, 0.0])
    tp, tm = position_bias_update(np.array([0.0, 1.0]), lj[:2])  # no pair at position 1
    np.testing.assert_allclose(tp, [1.0, 1.0])
    with pytest.raises(InputError, match="bias_norm"):
        position_bias_update(li, lj, bias_norm=-1)


@pytest.fixture(scope="module")
def random_logger_world():
    """PBM theta = 1/k over K = 6, a uniformly random logger: positions carry no relevance."""
    data = synthetic(150, 12, seed=11)
    cm = make_click_model(
        "pbm", eta=1.0, attractiveness={"kind": "binarized", "threshold": 3, "eps_minus": 0.1}
    )
    log = simulate(data, policy=UniformRandom(), click_model=cm, n_sessions=60_000, top_k=6, seed=2)
    return data, log


@pytest.mark.parametrize(("bias_norm", "tolerance"), [(0.0, 0.2), (1.0, 0.12)])
def test_the_learned_biases_follow_the_examination_curve(random_logger_world, bias_norm, tolerance):
    """t+ recovers theta_k^(1/(1+p)) on a random logger's PBM log; t- rises above 1.

    With the relevance of a shown result independent of its position, the clicked-side
    cost at position k is proportional to the clicks there, i.e. to theta_k = 1/k, as
    long as the pair weights do not depend on the position. They do at first (round 1
    ranks the tied scores in logged order, so |dNDCG| favours the top: t+ starts near
    1/k^2), and less once the ranker orders documents by features, which a random logger
    makes independent of the position. After 30 rounds we measured t+ within 10 % (p = 0)
    and 5 % (p = 1) of theta^(1/(1+p)) on this log (thousands of clicks per position); the
    tolerances
    (20 % without regularisation, whose ratios are noisier, 12 % with p = 1) leave room
    for that residual weighting while failing a 1/k^2 curve or no decrease at all.
    Under the PBM, t-_k = P(no click | k) / P(no click | 1) > 1 for k > 1.
    """
    data, log = random_logger_world
    target = unbiased_lambdamart(data, log, bias_norm=bias_norm)
    model = LambdaMART(n_estimators=30, num_leaves=8, max_depth=3, seed=0).fit(data, target)
    tp, tm = model.position_bias_["t_plus"], model.position_bias_["t_minus"]
    want = (1.0 / np.arange(1, 7)) ** (1.0 / (1.0 + bias_norm))
    assert tp[0] == 1.0 and tm[0] == 1.0
    assert np.all(np.diff(tp) < 0), tp
    np.testing.assert_allclose(tp, want, rtol=tolerance)
    assert np.all(tm[1:] > 1.0), tm


# -- the targets ------------------------------------------------------------------------------


def _hand_data() -> RankingData:
    """Two queries: q0 with docs 10..13 (rows 0-3), q1 with docs 20..22 (rows 4-6)."""
    return RankingData(
        np.arange(14, dtype=np.float32).reshape(7, 2),
        np.zeros(7),
        np.array([0, 4, 7]),
        np.array([0, 1]),
        np.array([10, 11, 12, 13, 20, 21, 22]),
    )


def _hand_log() -> pl.DataFrame:
    rows = [  # session, query, position, doc, click
        (0, 0, 1, 10, True),
        (0, 0, 2, 11, False),
        (0, 0, 3, 12, False),
        (1, 0, 1, 11, False),
        (1, 0, 2, 12, True),
        (1, 0, 3, 10, False),
        (2, 0, 1, 10, True),
        (2, 0, 2, 11, False),
        (2, 0, 3, 12, False),  # = session 0
        (3, 1, 1, 20, False),
        (3, 1, 2, 21, False),  # no click: no pairs
        (4, 1, 1, 21, True),
        (4, 1, 2, 20, True),  # all clicked: no pairs
    ]
    return pl.DataFrame(rows, schema=["session", "query", "position", "doc", "click"], orient="row")


THETA = np.array([1.0, 0.5, 0.25])


def test_propensity_ratio_pairs_on_a_hand_made_log():
    t = propensity_ratio_pairs(_hand_data(), _hand_log(), THETA)
    got = {tuple(p): w for p, w in zip(t.pairs.tolist(), t.pair_weights, strict=True)}
    # sessions 0 and 2: click at 1 over 11@2, 12@3 -> theta_2/theta_1, theta_3/theta_1, twice;
    # session 1: click on 12 at 2 over 11@1 and 10@3 -> theta_1/theta_2, theta_3/theta_2
    assert got == pytest.approx(
        {(0, 1): 2 * 0.5, (0, 2): 2 * 0.25, (2, 1): 1 / 0.5, (2, 0): 0.25 / 0.5}
    )
    assert t.name == "prs-pairs" and t.kind == "pairs"
    assert t.candidates.tolist() == [True, True, True, False, True, True, False]
    clipped = propensity_ratio_pairs(_hand_data(), _hand_log(), THETA, clip=0.5)
    got = {tuple(p): w for p, w in zip(clipped.pairs.tolist(), clipped.pair_weights, strict=True)}
    assert got[(0, 2)] == pytest.approx(2 * 0.5) and got[(2, 0)] == pytest.approx(1.0)


def test_propensity_ratio_pairs_equal_brute_force():
    data = synthetic(10, 8, seed=5)
    cm = make_click_model("pbm", eta=1.0)
    log = simulate(data, policy=UniformRandom(), click_model=cm, n_sessions=300, top_k=5, seed=1)
    theta = np.array([1.0, 0.6, 0.4, 0.3, 0.2])
    t = propensity_ratio_pairs(data, log, theta)
    row = {
        (q, d): r for r, (q, d) in enumerate(zip(data.qid[data.query_index], data.doc, strict=True))
    }
    want: dict = {}
    for _, s in log.group_by("session"):
        recs = s.select("query", "doc", "position", "click").rows()
        for qa, da, pa, ca in recs:
            for _, db, pb, cb in recs:
                if ca and not cb:
                    key = (row[(qa, da)], row[(qa, db)])
                    want[key] = want.get(key, 0.0) + theta[pb - 1] / theta[pa - 1]
    got = {tuple(p): w for p, w in zip(t.pairs.tolist(), t.pair_weights, strict=True)}
    assert got.keys() == want.keys() and len(got) > 20
    for key, w in want.items():
        assert got[key] == pytest.approx(w)


@pytest.mark.parametrize("candidates", ["shown", "all"])
def test_ips_rank_pairs_on_a_hand_made_log(candidates):
    t = ips_rank_pairs(_hand_data(), _hand_log(), THETA, candidates=candidates)
    got = {tuple(p): w for p, w in zip(t.pairs.tolist(), t.pair_weights, strict=True)}
    # G(10) = 2 clicks at position 1 = 2; G(12) = 1 / theta_2 = 2; G(21) = 1; G(20) = 1 / 0.5
    want = {(0, 1): 2.0, (0, 2): 2.0, (2, 0): 2.0, (2, 1): 2.0, (5, 4): 1.0, (4, 5): 2.0}
    if candidates == "all":  # the never-shown 13 and 22 are compared too
        want.update({(0, 3): 2.0, (2, 3): 2.0, (5, 6): 1.0, (4, 6): 2.0})
    assert got == pytest.approx(want)
    assert t.name == "ips-pairs"
    gains = ips(_hand_data(), _hand_log(), THETA, candidates=candidates)
    assert (t.candidates is None) == (gains.candidates is None)


def test_unbiased_lambdamart_target_holds_the_distinct_sessions_with_pairs():
    t = unbiased_lambdamart(_hand_data(), _hand_log(), bias_norm=0.5)
    s = t.sessions
    assert t.kind == "sessions" and t.name == "unbiased-lambdamart"
    lists = sorted(
        (tuple(s.rows[a:b]), tuple(s.positions[a:b]), tuple(s.clicks[a:b]), c)
        for a, b, c in zip(s.sptr[:-1], s.sptr[1:], s.counts, strict=True)
    )
    assert lists == [
        ((0, 1, 2), (1, 2, 3), (True, False, False), 2.0),
        ((1, 2, 0), (1, 2, 3), (False, True, False), 1.0),
    ]
    assert s.n_positions == 3 and s.bias_norm == 0.5 and s.cost == "ranknet"
    assert t.metadata["pairs"] == 2 * 2 + 2 and t.metadata["sessions_with_pairs"] == 3
    assert t.candidates.tolist() == [True, True, True, False, True, True, False]
    assert unbiased_lambdamart(_hand_data(), _hand_log(), positions=2).sessions.n_positions == 2
    with pytest.raises(InputError, match="bias_norm"):
        unbiased_lambdamart(_hand_data(), _hand_log(), bias_norm=-0.5)
    with pytest.raises(InputError, match="positions"):
        unbiased_lambdamart(_hand_data(), _hand_log(), positions=0)


def _polars_lists(data: RankingData, log: pl.DataFrame) -> pl.DataFrame:
    """The distinct sessions with pairs by polars list aggregations (the order to match)."""
    keys = pl.DataFrame({"query": data.qid[data.query_index], "doc": data.doc,
                         "row": np.arange(data.n_docs)})  # fmt: skip
    return (
        log.join(keys, on=["query", "doc"]).sort("session", "position")
        .group_by("session", maintain_order=True)
        .agg("row", "position", "click", n_click=pl.col("click").sum(), n=pl.len())
        .filter((pl.col("n_click") > 0) & (pl.col("n_click") < pl.col("n")))
        .group_by("row", "position", "click").agg(count=pl.len())
        .sort("row", "position", "click")
    )  # fmt: skip


def test_unbiased_lambdamart_lists_are_polars_sorted_whatever_the_log_order(small_world):
    """The distinct sessions in lexicographic (rows, positions, clicks) order, the same for a
    shuffled log with string session ids (sorted on the way) as for the log as simulated."""
    data, log = small_world
    log = log.select("session", "query", "doc", pl.col("position").cast(pl.Int64), "click")
    want = _polars_lists(data, log)
    shuffled = log.sample(fraction=1.0, shuffle=True, seed=3).with_columns(
        pl.format("s{}", "session").alias("session")
    )
    for lg in (log, shuffled):
        s = unbiased_lambdamart(data, lg).sessions
        got = [
            (s.rows[a:b].tolist(), s.positions[a:b].tolist(), s.clicks[a:b].tolist(), c)
            for a, b, c in zip(s.sptr[:-1], s.sptr[1:], s.counts, strict=True)
        ]
        assert got == [(r, p, c, float(n)) for r, p, c, n in want.iter_rows()]


def test_unbiased_lambdamart_names_a_logged_pair_missing_from_the_data():
    log = _hand_log().with_columns(
        pl.when(pl.col("doc") == 13).then(99).otherwise(pl.col("doc")).alias("doc")
    )
    log = pl.concat([log, log.head(1).with_columns(doc=pl.lit(99, pl.Int64))])
    with pytest.raises(LogSchemaError, match=r"1 \(query, doc\) pair\(s\) of the click log"):
        unbiased_lambdamart(_hand_data(), log)


def test_targets_refuse_propensities_that_miss_a_position():
    with pytest.raises(InputError, match="position 3"):
        propensity_ratio_pairs(_hand_data(), _hand_log(), THETA[:2])
    with pytest.raises(InputError, match="position 3"):
        ips_rank_pairs(_hand_data(), _hand_log(), THETA[:2])


def test_session_lists_check_their_fields():
    ok = dict(
        rows=[0, 1, 2],
        sptr=[0, 2, 3],
        positions=[1, 2, 1],
        clicks=np.array([1, 0, 1], bool),
        counts=[1.0, 2.0],
        n_positions=2,
    )
    assert SessionLists(**ok).n_sessions == 2
    for change, words in [
        ({"sptr": [0, 3, 3]}, "sptr"),
        ({"counts": [1.0, 0.0]}, "counts"),
        ({"positions": [0, 1, 1]}, "1-based"),
        ({"n_positions": 0}, "n_pos"),
        ({"cost": "hinge"}, "cost"),
        ({"bias_norm": -1}, "bias_norm"),
    ]:
        with pytest.raises(InputError, match=words):
            SessionLists(**{**ok, **change})
    with pytest.raises(InputError, match="exactly one"):
        Target("x", gains=np.zeros(3), sessions=SessionLists(**ok))


# -- Target.subset ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_world():
    data = synthetic(30, 9, seed=8)
    cm = make_click_model("pbm", eta=1.0)
    log = simulate(data, policy=UniformRandom(), click_model=cm, n_sessions=3000, top_k=5, seed=4)
    return data, log


def _lists(t: Target) -> set:
    s = t.sessions
    return {
        (tuple(s.rows[a:b]), tuple(s.positions[a:b]), tuple(s.clicks[a:b]), c)
        for a, b, c in zip(s.sptr[:-1], s.sptr[1:], s.counts, strict=True)
    }


@pytest.mark.parametrize("kind", ["oracle", "ips", "prs-pairs", "ips-pairs", "unbiased-lambdamart"])
def test_subset_equals_the_target_built_on_the_subset(small_world, kind):
    data, log = small_world
    theta = 1.0 / np.arange(1, 6)
    build = {
        "oracle": lambda d, lg: oracle(d),
        "ips": lambda d, lg: ips(d, lg, theta, clip=None),  # auto clipping follows the log size
        "prs-pairs": lambda d, lg: propensity_ratio_pairs(d, lg, theta),
        "ips-pairs": lambda d, lg: ips_rank_pairs(d, lg, theta),
        "unbiased-lambdamart": lambda d, lg: unbiased_lambdamart(d, lg),
    }[kind]
    queries = np.array([17, 3, 25, 4, 11])  # not sorted: the subset's order is kept
    sub_data = data.subset(queries)
    sub_log = log.filter(pl.col("query").is_in(data.qid[queries].tolist()))
    got = build(data, log).subset(data, queries)
    want = build(sub_data, sub_log)
    got.check_aligned(sub_data)
    assert got.kind == want.kind and got.metadata["subset_queries"] == 5
    if want.gains is not None:
        np.testing.assert_array_equal(got.gains, want.gains)
    if want.candidates is not None:
        np.testing.assert_array_equal(got.candidates, want.candidates)
    if want.pairs is not None:
        np.testing.assert_array_equal(got.pairs, want.pairs)
        np.testing.assert_allclose(got.pair_weights, want.pair_weights)
        assert len(want.pairs) > 0
    if want.sessions is not None:
        assert _lists(got) == _lists(want) and len(_lists(want)) > 5


def test_subset_errors_name_the_argument(small_world):
    data, log = small_world
    t = unbiased_lambdamart(data, log)
    with pytest.raises(InputError, match="distinct"):
        t.subset(data, [1, 1])
    with pytest.raises(InputError, match="queries must lie"):
        t.subset(data, [data.n_queries])
    with pytest.raises(InputError, match="integer"):
        t.subset(data, [0.5])
    with pytest.raises(InputError, match="rows"):
        t.subset(data.subset([0, 1]), [0])


# -- LambdaMART with session lists ---------------------------------------------------------


def test_lambdamart_learns_and_saves_the_position_bias(random_logger_world, tmp_path):
    data, log = random_logger_world
    target = unbiased_lambdamart(data, log)
    model = LambdaMART(n_estimators=5, num_leaves=8, seed=0).fit(data, target)
    bias = model.position_bias_
    assert set(bias) == {"t_plus", "t_minus"} and bias["t_plus"].shape == (6,)
    assert "position bias t_plus (positions 1..6): 1.000" in model.summary()
    path = model.save(tmp_path / "m")
    meta = json.loads((path / "meta.json").read_text())
    assert meta["position_bias"]["t_plus"] == pytest.approx(bias["t_plus"].tolist())
    back = LambdaMART.load(path)
    np.testing.assert_array_equal(back.position_bias_["t_minus"], bias["t_minus"])
    np.testing.assert_array_equal(back.predict(data), model.predict(data))
    assert LambdaMART(n_estimators=2).fit(data).position_bias_ is None
    meta["position_bias"] = {"t_plus": [1.0, -2.0], "t_minus": [1.0, 1.0]}
    (path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DataFormatError, match="position_bias"):
        LambdaMART.load(path)
    with pytest.raises(InputError, match="weighting='ndcg'"):
        LambdaMART(n_estimators=2, weighting="none").fit(data, target)


def test_gradients_of_the_first_round_use_unit_biases_then_the_update(random_logger_world):
    """Round 1 is LambdaRank on the session pairs; the biases then come from its costs."""
    data, log = random_logger_world
    target = unbiased_lambdamart(data, log)
    model = LambdaMART(n_estimators=1, num_leaves=8, seed=0)
    fobj = lambdamart_objective(model, data.qptr, None, target.sessions, None)
    s = target.sessions
    grad, hess = fobj(np.zeros(data.n_docs), None)
    ref = session_lambdas(
        np.zeros(data.n_docs),
        s.rows,
        s.sptr,
        s.positions,
        s.clicks,
        s.counts,
        truncation=30,
        normalize=True,
    )
    np.testing.assert_array_equal(grad, -ref.forces)
    tp, tm = position_bias_update(ref.li, ref.lj, bias_norm=1.0)
    np.testing.assert_array_equal(model.position_bias_["t_plus"], tp)
    grad2, _ = fobj(np.zeros(data.n_docs), None)
    ref2 = session_lambdas(
        np.zeros(data.n_docs),
        s.rows,
        s.sptr,
        s.positions,
        s.clicks,
        s.counts,
        t_plus=tp,
        t_minus=tm,
        truncation=30,
        normalize=True,
    )
    np.testing.assert_array_equal(grad2, -ref2.forces)
