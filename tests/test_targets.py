"""Tests of clickrank.targets: oracle, naive, IPS and click preferences from click logs."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from clickrank import InputError, LogSchemaError, RankingData
from clickrank.clickmodels import make_click_model
from clickrank.datasets import split_queries, synthetic
from clickrank.lambdamart import LambdaMART
from clickrank.metrics import ndcg
from clickrank.policies import DeterministicPolicy, UniformRandom
from clickrank.policies.production import production_ranker
from clickrank.simulation import FairPairs, simulate
from clickrank.targets import (
    Target,
    as_theta,
    click_preferences,
    fair_pairs,
    ips,
    label_agreement,
    naive,
    oracle,
    skip_above,
)


def _random_log(data: RankingData, n_sessions: int, top_k: int, seed: int) -> pl.DataFrame:
    """Uniformly shuffled top-k lists with random clicks (numpy only)."""
    rng = np.random.default_rng(seed)
    q = rng.integers(0, data.n_queries, size=n_sessions)
    lens = data.lengths[q]
    k = np.minimum(lens, top_k)
    rows, sess, pos = [], [], []
    keys = rng.random((n_sessions, int(data.lengths.max())))
    keys[np.arange(int(data.lengths.max()))[None, :] >= lens[:, None]] = np.inf
    order = np.argsort(keys, axis=1)
    for p in range(top_k):
        ok = p < k
        sess.append(np.flatnonzero(ok))
        pos.append(np.full(ok.sum(), p + 1))
        rows.append(data.qptr[q[ok]] + order[ok, p])
    sess, pos, rows = np.concatenate(sess), np.concatenate(pos), np.concatenate(rows)
    click = rng.random(len(rows)) < 0.6 / pos
    return pl.DataFrame(
        {
            "session": pl.Series(sess, dtype=pl.UInt64),
            "query": data.qid[q[sess]],
            "position": pl.Series(pos, dtype=pl.UInt16),
            "doc": data.doc[rows],
            "click": click,
            "_row": rows,
        }
    ).sort("session", "position")


@pytest.fixture(scope="module")
def data() -> RankingData:
    return synthetic(12, 6, seed=3)


@pytest.fixture(scope="module")
def log(data) -> pl.DataFrame:
    return _random_log(data, 400, 4, seed=5)


THETA = np.array([1.0, 0.5, 0.3, 0.2])


def test_oracle_gains_are_exponential_labels(data):
    t = oracle(data)
    np.testing.assert_array_equal(t.gains, 2.0**data.y - 1)
    assert t.candidates is None and t.kind == "gains"


def test_oracle_needs_labels(data):
    with pytest.raises(InputError, match="no labels"):
        oracle(data.with_labels(None))


def test_naive_counts_clicks_and_impressions(data, log):
    rows = log["_row"].to_numpy()
    clicks = np.bincount(rows, weights=log["click"].to_numpy(), minlength=data.n_docs)
    shown = np.bincount(rows, minlength=data.n_docs)
    t = naive(data, log.drop("_row"))
    np.testing.assert_array_equal(t.gains, clicks)
    np.testing.assert_array_equal(t.candidates, shown > 0)
    ctr = naive(data, log, kind="ctr")
    np.testing.assert_allclose(ctr.gains[shown > 0], clicks[shown > 0] / shown[shown > 0])
    assert naive(data, log, candidates="all").candidates is None


def test_ips_gains_equal_numpy_reference(data, log):
    rows = log["_row"].to_numpy()
    pos = log["position"].to_numpy().astype(int)
    c = log["click"].to_numpy()
    want = np.bincount(rows, weights=c / THETA[pos - 1], minlength=data.n_docs)
    t = ips(data, log, THETA, clip=None)
    np.testing.assert_allclose(t.gains, want)
    # the default clip is min(10 / sqrt(sessions), 1): 0.5 for this 400-session log
    auto = ips(data, log, THETA)
    assert auto.metadata["clip"] == pytest.approx(10 / np.sqrt(log["session"].n_unique()))
    np.testing.assert_allclose(
        auto.gains,
        np.bincount(rows, weights=c / np.maximum(THETA, 0.5)[pos - 1], minlength=data.n_docs),
    )
    clipped = ips(data, log, THETA, clip=0.4)
    np.testing.assert_allclose(
        clipped.gains,
        np.bincount(rows, weights=c / np.maximum(THETA, 0.4)[pos - 1], minlength=data.n_docs),
    )


def test_ips_self_normalized_gains_sum_to_one_per_query(data, log):
    t = ips(data, log, THETA, normalize="query")
    sums = np.bincount(data.query_index, weights=t.gains, minlength=data.n_queries)
    has = (
        np.bincount(data.query_index, weights=ips(data, log, THETA).gains, minlength=data.n_queries)
        > 0
    )
    np.testing.assert_allclose(sums[has], 1.0)


def test_lazy_frame_and_propensity_object_give_the_same_target(data, log):
    class Props:
        theta = THETA

    a = ips(data, log, THETA)
    b = ips(data, log.lazy(), Props())
    np.testing.assert_array_equal(a.gains, b.gains)
    np.testing.assert_array_equal(a.candidates, b.candidates)


def test_string_ids_are_joined(data, log):
    d = RankingData(
        data.X,
        data.y,
        data.qptr,
        qid=np.array([f"q{i}" for i in data.qid]),
        doc=np.array([f"d{i}" for i in data.doc]),
    )
    slog = log.with_columns(
        ("q" + pl.col("query").cast(pl.String)).alias("query"),
        ("d" + pl.col("doc").cast(pl.String)).alias("doc"),
    )
    np.testing.assert_array_equal(ips(d, slog, THETA).gains, ips(data, log, THETA).gains)


def _skip_above_reference(log: pl.DataFrame, theta=None) -> dict[tuple[int, int], float]:
    out: dict[tuple[int, int], float] = {}
    for _, s in log.group_by("session"):
        s = s.sort("position")
        rows, clicks, pos = s["_row"].to_list(), s["click"].to_list(), s["position"].to_list()
        for a in range(len(rows)):
            if not clicks[a]:
                continue
            for b in range(a):
                if not clicks[b] and pos[b] < pos[a]:
                    w = 1.0 if theta is None else 1.0 / theta[pos[a] - 1]
                    out[(rows[a], rows[b])] = out.get((rows[a], rows[b]), 0.0) + w
    return out


@pytest.mark.parametrize("weighted", [False, True])
def test_skip_above_pairs_equal_brute_force(data, log, weighted):
    t = skip_above(data, log, ips_weighted=weighted, propensities=THETA if weighted else None)
    got = {tuple(p): w for p, w in zip(t.pairs.tolist(), t.pair_weights, strict=True)}
    want = _skip_above_reference(log, THETA if weighted else None)
    assert set(got) == set(want)
    for key, w in want.items():
        assert got[key] == pytest.approx(w)
    assert t.kind == "pairs" and len(t.pairs) > 0


def test_skip_above_on_a_hand_made_session():
    d = RankingData(np.zeros((4, 1), np.float32), np.zeros(4), np.array([0, 4]))
    log = pl.DataFrame(
        {
            "session": [0, 0, 0, 0],
            "query": [0] * 4,
            "position": [1, 2, 3, 4],
            "doc": [3, 2, 1, 0],
            "click": [False, True, False, True],
        }
    )
    t = skip_above(d, log)
    # click at 2 over skip at 1; click at 4 over skips at 1 and 3
    assert sorted(map(tuple, t.pairs.tolist())) == [(0, 1), (0, 3), (2, 3)]


# -- DESIGN §4 IPS example ----------------------------------------------------------


def test_ips_recovers_relevance_from_two_positions():
    """gamma = 0.3, shown 100k times at theta 1.0 and 100k at theta 0.4 (DESIGN §4)."""
    n, gamma, theta = 100_000, 0.3, np.array([1.0, 0.4])
    rng = np.random.default_rng(2017)
    d = RankingData(np.zeros((2, 1), np.float32), np.array([1.0, 0.0]), np.array([0, 2]))
    # doc 0 at position 1 in the first n sessions, at position 2 in the next n;
    # doc 1 fills the other slot
    session = np.repeat(np.arange(2 * n), 2)
    doc = np.tile([0, 1], 2 * n)
    pos = np.where(
        np.repeat(np.arange(2 * n) < n, 2), np.tile([1, 2], 2 * n), np.tile([2, 1], 2 * n)
    )
    gam = np.where(doc == 0, gamma, 0.05)
    click = rng.random(2 * 2 * n) < theta[pos - 1] * gam
    log = pl.DataFrame(
        {"session": session, "query": 0, "position": pos, "doc": doc, "click": click}
    )
    for p in (1, 2):
        part = log.filter((pl.col("session") < n) == (p == 1))
        ctr = naive(d, part, kind="ctr").gains[0]
        rate = ips(d, part, theta).gains[0] / n
        pc = theta[p - 1] * gamma
        se_ctr = np.sqrt(pc * (1 - pc) / n)
        se_ips = se_ctr / theta[p - 1]
        assert abs(ctr - pc) < 4 * se_ctr  # CTR ~ 0.3 and 0.12
        assert abs(rate - gamma) < 4 * se_ips  # IPS ~ 0.3 at both positions
    both_ctr = naive(d, log, kind="ctr").gains[0]
    assert abs(both_ctr - 0.7 * gamma) < 4 * np.sqrt(0.7 * gamma / (2 * n))  # biased: 0.21
    both_ips = ips(d, log, theta).gains[0] / (2 * n)
    assert abs(both_ips - gamma) < 4 * np.sqrt(gamma * (1 / 1.0 + 1 / 0.4) / 2 / (2 * n))


# -- errors -------------------------------------------------------------------------


def test_log_pairs_not_in_data_are_errors(data, log):
    bad = log.with_columns(
        pl.when(pl.col("session") == 0).then(999).otherwise(pl.col("doc")).alias("doc")
    )
    with pytest.raises(LogSchemaError, match="not in the data"):
        ips(data, bad, THETA)
    with pytest.raises(LogSchemaError, match="not in the data"):
        skip_above(data, bad)


def test_propensities_must_cover_every_logged_position(data, log):
    with pytest.raises(InputError, match=r"position 4 .* 1\.\.3"):
        ips(data, log, THETA[:3])


@pytest.mark.parametrize(
    "theta", [[1.0, 0.0, 0.3, 0.2], [1.0, -0.5, 0.3, 0.2], [], [1.0, np.nan, 1, 1]]
)
def test_non_positive_or_bad_propensities_are_errors(data, log, theta):
    with pytest.raises(InputError):
        ips(data, log, theta, clip=None)


def test_a_zero_propensity_is_usable_once_clipped(data, log):
    """A θ of 0 given by hand is usable once clipped."""
    t = ips(data, log, [1.0, 0.0, 0.3, 0.2], clip=0.25)
    assert t.metadata["min_theta"] == 0.25
    with pytest.raises(InputError, match="clip"):
        ips(data, log, [1.0, -0.5, 0.3, 0.2], clip=0.25)


def test_as_theta_accepts_objects_with_theta():
    class P:
        theta = [1.0, 0.5]

    np.testing.assert_array_equal(as_theta(P()), [1.0, 0.5])


def test_missing_columns_and_bad_types_are_schema_errors(data, log):
    with pytest.raises(LogSchemaError, match="position"):
        ips(data, log.drop("position"), THETA)
    with pytest.raises(LogSchemaError, match="session"):
        skip_above(data, log.drop("session"))
    with pytest.raises(LogSchemaError, match="click"):
        naive(data, log.with_columns(pl.col("click").cast(pl.String)))
    with pytest.raises(InputError, match="kind"):
        naive(data, log, kind="views")


def test_target_must_hold_gains_or_pairs():
    with pytest.raises(InputError, match="exactly one"):
        Target("x")
    with pytest.raises(InputError, match="non-negative"):
        Target("x", gains=np.array([1.0, -1.0]))


def test_summary_mentions_candidates(data, log):
    text = ips(data, log, THETA).summary()
    assert "ips" in text and "candidates: " in text and "documents shown" in text


def test_targets_do_not_depend_on_log_row_order(data, log):
    shuffled = log.sample(fraction=1.0, shuffle=True, seed=9)
    assert ips(data, shuffled, THETA).gains.tobytes() == ips(data, log, THETA).gains.tobytes()
    a = skip_above(data, shuffled, ips_weighted=True, propensities=THETA)
    b = skip_above(data, log, ips_weighted=True, propensities=THETA)
    assert a.pairs.tobytes() == b.pairs.tobytes()
    assert a.pair_weights.tobytes() == b.pair_weights.tobytes()


# -- click-preference strategies ------------------------------------------------------


def _hand_log(clicks, *, sessions=None, intervention=None, pivot=None, swap_k=None):
    """Sessions over the 6 documents of one query; doc at position p is 6 - p (row 6 - p)."""
    clicks = np.atleast_2d(clicks)
    S, K = clicks.shape
    cols = {
        "session": np.repeat(np.arange(S) if sessions is None else sessions, K),
        "query": 0,
        "position": np.tile(np.arange(1, K + 1), S),
        "doc": np.tile(np.arange(K - 1, -1, -1), S),
        "click": clicks.ravel().astype(bool),
    }
    if intervention is not None:
        cols["intervention"] = pl.Series(np.repeat(intervention, K)).cast(pl.Categorical)
        cols["swap_pivot"] = pl.Series(np.repeat(pivot, K), dtype=pl.UInt16)
        cols["swap_k"] = pl.Series(np.repeat(swap_k, K), dtype=pl.UInt16)
    return pl.DataFrame(cols)


HAND = RankingData(np.zeros((6, 1), np.float32), np.zeros(6), np.array([0, 6]))


def _at(*pairs):
    """(winner position, loser position) -> (row, row) with row = 6 - position."""
    return sorted((6 - a, 6 - b) for a, b in pairs)


def _pairs(t):
    return sorted(map(tuple, t.pairs.tolist()))


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("skip-above", [(2, 1), (4, 1), (4, 3), (5, 1), (5, 3)]),
        ("last-click-skip-above", [(5, 1), (5, 3)]),
        ("skip-previous", [(2, 1), (4, 3)]),
        ("skip-next", [(2, 3), (5, 6)]),
        ("click-skip-next", [(2, 3), (5, 6)]),
        ("skip-above+skip-next", [(2, 1), (4, 1), (4, 3), (5, 1), (5, 3), (2, 3), (5, 6)]),
        ("last-click-skip-above+skip-previous", [(5, 1), (5, 3), (2, 1), (4, 3)]),
    ],
)
def test_strategies_on_a_hand_made_session(strategy, expected):
    # clicks at positions 2, 4, 5 of 6
    t = click_preferences(HAND, _hand_log([0, 1, 0, 1, 1, 0]), strategy=strategy)
    assert _pairs(t) == _at(*expected)
    np.testing.assert_array_equal(t.pair_weights, 1.0)
    assert t.metadata["sessions_with_preferences"] == 1


def test_a_pair_found_by_two_rules_counts_once_per_session():
    log = _hand_log([[0, 1, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0]])
    t = click_preferences(HAND, log, strategy="skip-above+skip-previous+skip-next")
    got = dict(zip(map(tuple, t.pairs.tolist()), t.pair_weights, strict=True))
    assert got == {(4, 5): 2.0, (4, 3): 2.0}  # click at 2 over 1 (two rules) and over 3
    assert t.metadata["preferences"] == 4 and t.name == "skip-above+skip-previous+skip-next"


def test_skip_above_is_click_preferences_with_the_default_strategy(data, log):
    a = skip_above(data, log, ips_weighted=True, propensities=THETA)
    b = click_preferences(data, log, ips_weighted=True, propensities=THETA)
    assert a.name == b.name == "skip-above"
    assert a.pairs.tobytes() == b.pairs.tobytes()
    assert a.pair_weights.tobytes() == b.pair_weights.tobytes()


def _reference(log: pl.DataFrame, rules, theta=None) -> dict[tuple[int, int], float]:
    """Brute force over sessions in Python: the union of the rules per session."""
    out: dict[tuple[int, int], float] = {}
    for _, s in log.group_by("session"):
        s = s.sort("position")
        rows, clicks, pos = s["_row"].to_list(), s["click"].to_list(), s["position"].to_list()
        last = max((p for p, c in zip(pos, clicks, strict=True) if c), default=0)
        for a in range(len(rows)):
            for b in range(len(rows)):
                if not clicks[a] or clicks[b]:
                    continue
                ok = {
                    "skip-above": pos[b] < pos[a],
                    "last-click-skip-above": pos[b] < pos[a] == last,
                    "skip-previous": pos[b] == pos[a] - 1,
                    "skip-next": pos[b] == pos[a] + 1,
                }
                if any(ok[r] for r in rules):
                    w = 1.0 if theta is None else 1.0 / theta[pos[a] - 1]
                    out[(rows[a], rows[b])] = out.get((rows[a], rows[b]), 0.0) + w
    return out


@pytest.mark.parametrize(
    "strategy",
    ["last-click-skip-above", "skip-previous", "skip-next", "skip-previous+skip-next",
     "skip-above+skip-next", "last-click-skip-above+skip-next"],
)  # fmt: skip
@pytest.mark.parametrize("weighted", [False, True])
def test_strategies_equal_brute_force(data, log, strategy, weighted):
    t = click_preferences(
        data, log, strategy=strategy, ips_weighted=weighted,
        propensities=THETA if weighted else None,
    )  # fmt: skip
    got = {tuple(p): w for p, w in zip(t.pairs.tolist(), t.pair_weights, strict=True)}
    want = _reference(log, strategy.split("+"), THETA if weighted else None)
    assert set(got) == set(want) and len(want) > 0
    for key, w in want.items():
        assert got[key] == pytest.approx(w)


def test_fair_pairs_on_hand_made_sessions():
    clicks = [
        [0, 1, 0, 1, 1, 0],  # pairs (1,2) (3,4) (5,6): 2 > 1 and 4 > 3; (5,6) lower unclicked
        [1, 0, 1, 0, 0, 1],  # pairs (2,3) (4,5): 3 > 2; the click at 6 is in no pair
        [0, 1, 0, 0, 0, 0],  # not a FairPairs session: ignored
    ]
    log = _hand_log(clicks, intervention=["fairpairs", "fairpairs", "none"], pivot=[1, 2, 0],
                    swap_k=[6, 5, 0])  # fmt: skip
    t = fair_pairs(HAND, log)
    assert _pairs(t) == _at((2, 1), (4, 3), (3, 2))
    assert t.name == "fairpairs" and t.metadata["fairpairs_sessions"] == 2
    assert t.candidates.all()  # every document was shown
    same = click_preferences(HAND, log.lazy(), strategy="FairPairs")
    assert same.pairs.tobytes() == t.pairs.tobytes()


def test_strategy_and_fair_pairs_errors(data, log):
    with pytest.raises(InputError, match="unknown preference strategy 'skip-below'"):
        click_preferences(data, log, strategy="skip-above+skip-below")
    with pytest.raises(InputError, match="cannot be combined"):
        click_preferences(data, log, strategy="fairpairs+skip-above")
    with pytest.raises(InputError, match="non-empty"):
        click_preferences(data, log, strategy="")
    with pytest.raises(InputError, match="needs propensities"):
        click_preferences(data, log, strategy="skip-next", ips_weighted=True)
    fair = _hand_log([0, 1, 0, 0, 0, 0], intervention=["fairpairs"], pivot=[1], swap_k=[6])
    with pytest.raises(InputError, match="not defined for 'fairpairs'"):
        click_preferences(HAND, fair, strategy="fairpairs", ips_weighted=True, propensities=THETA)
    with pytest.raises(LogSchemaError, match="intervention"):
        fair_pairs(data, log)
    none = fair.with_columns(pl.lit("none").cast(pl.Categorical).alias("intervention"))
    with pytest.raises(InputError, match="no FairPairs sessions"):
        fair_pairs(HAND, none)
    with pytest.raises(LogSchemaError, match="1 or 2"):
        fair_pairs(HAND, fair.with_columns(pl.lit(3, pl.UInt16).alias("swap_pivot")))


def test_label_agreement_shares():
    t = Target("p", pairs=np.array([[0, 1], [1, 0], [2, 3]]), pair_weights=[3.0, 1.0, 4.0])
    a = label_agreement(t, np.array([2.0, 1.0, 0.0, 0.0]))
    assert a == pytest.approx(
        {"agree": 3 / 8, "contradict": 1 / 8, "tie": 4 / 8, "accuracy": 0.75, "weight": 8.0}
    )
    with pytest.raises(InputError, match="gains"):
        label_agreement(Target("g", gains=np.zeros(2)), np.zeros(2))


# -- the sign, and what the strategies learn on simulated logs ------------------------------

TREES = dict(n_estimators=40, learning_rate=0.1, num_leaves=15, min_data_in_leaf=20, seed=0)


@pytest.fixture(scope="module")
def world():
    """Train/test split, a weak deterministic logger, a PBM with binarized relevance."""
    train, test = split_queries(synthetic(1400, 20, seed=11), [1000, 400], seed=11)
    logger = production_ranker(train, 0.02, seed=11)
    model = make_click_model(
        "pbm", eta=1.0, attractiveness={"kind": "binarized", "threshold": 3, "eps_minus": 0.1}
    )
    return train, test, logger, model


def _ndcg(model, test) -> float:
    return float(ndcg(model.predict(test), test.y, test.qptr, k=10))


def _random_ndcg(test) -> float:
    return float(ndcg(np.random.default_rng(0).random(test.n_docs), test.y, test.qptr, k=10))


def test_skip_above_has_the_right_sign_on_label_ordered_sessions(world):
    """Sessions listing a query's documents worst first, clicked iff label >= t (t = 1..4).

    Skip-above then yields exactly the label-ordered pairs, weighted by the label
    difference; LambdaMART on them must match the oracle, and on the reversed
    pairs fall below random.
    """
    train, test, _, _ = world
    keys = pl.DataFrame(
        {"query": train.qid[train.query_index], "doc": train.doc, "y": train.y}
    ).sort("query", "y", "doc")
    log = pl.concat(
        [keys.with_columns(session=pl.col("query") * 10 + t, click=pl.col("y") >= t)
         for t in (1, 2, 3, 4)]
    ).with_columns(position=pl.int_range(1, pl.len() + 1).over("session"))  # fmt: skip
    t = skip_above(train, log)
    y, L = train.y, 20  # every query has 20 documents
    i = np.repeat(np.arange(train.n_docs), L)
    j = train.qptr[train.query_index[i]] + np.tile(np.arange(L), train.n_docs)
    i, j = i[y[i] > y[j]], j[y[i] > y[j]]
    assert _pairs(t) == sorted(zip(i.tolist(), j.tolist(), strict=True))
    np.testing.assert_array_equal(t.pair_weights, y[t.pairs[:, 0]] - y[t.pairs[:, 1]])
    learned = _ndcg(LambdaMART(**TREES).fit(train, t), test)
    best = _ndcg(LambdaMART(**TREES).fit(train, oracle(train)), test)
    flipped = Target("flipped", pairs=t.pairs[:, ::-1], pair_weights=t.pair_weights)
    worst = _ndcg(LambdaMART(**TREES).fit(train, flipped), test)
    assert learned > best - 0.03, (learned, best)
    assert worst < _random_ndcg(test) - 0.1 < learned - 0.4, (worst, learned)


def test_skip_above_learns_from_a_uniformly_random_logger(world):
    train, test, _, model = world
    log = simulate(train, policy=UniformRandom(), click_model=model, n_sessions=20_000, seed=1)
    score = _ndcg(LambdaMART(**TREES).fit(train, skip_above(train, log)), test)
    assert score > _random_ndcg(test) + 0.3, score


@pytest.fixture(scope="module")
def logs(world):
    train, _, logger, model = world
    kw = dict(policy=DeterministicPolicy(logger), click_model=model, n_sessions=30_000, seed=2)
    return simulate(train, **kw), simulate(train, interventions=FairPairs(1.0), **kw)


def _logger_rank_order(train, logger, t):
    """+1 where the preferred document is ranked below the other one by the logger."""
    s = logger.predict(train.X)
    return s[t.pairs[:, 0]] < s[t.pairs[:, 1]]


def test_fair_pairs_preferences_are_unbiased_and_skip_above_is_not(world, logs):
    train, _, logger, _ = world
    plain, fair = logs
    fp, sa = fair_pairs(train, fair), skip_above(train, plain)
    y = train.y
    # accuracy on pairs with different labels: SE from the number of sessions that
    # produced a preference (fewer than the preferences: conservative for their correlation)
    acc = {}
    for name, t in (("fairpairs", fp), ("skip-above", sa)):
        a = label_agreement(t, y)
        n = t.metadata["sessions_with_preferences"] * (1 - a["tie"])
        acc[name] = (a["accuracy"], np.sqrt(a["accuracy"] * (1 - a["accuracy"]) / n))
    (p_fp, se_fp), (p_sa, se_sa) = acc["fairpairs"], acc["skip-above"]
    assert p_fp - p_sa > max(0.1, 4 * np.hypot(se_fp, se_sa)), acc
    # presentation bias itself: between equal labels, skip-above always prefers the document
    # the logger ranked lower; FairPairs picks either with probability 1/2
    for t, lo, hi in ((fp, 0.5, 0.5), (sa, 1.0, 1.0)):
        tie = y[t.pairs[:, 0]] == y[t.pairs[:, 1]]
        w = t.pair_weights[tie]
        against = float(w[_logger_rank_order(train, logger, t)[tie]].sum() / w.sum())
        se = np.sqrt(0.25 / w.sum())
        assert lo - 4 * se <= against <= hi + 4 * se, (t.name, against, se)


def test_lambdamart_on_fair_pairs_beats_random_and_skip_above(world, logs):
    train, test, _, _ = world
    plain, fair = logs
    fp = _ndcg(LambdaMART(**TREES).fit(train, fair_pairs(train, fair)), test)
    sa = _ndcg(LambdaMART(**TREES).fit(train, skip_above(train, plain)), test)
    assert fp > _random_ndcg(test) + 0.25 and fp > sa + 0.3, (fp, sa)
