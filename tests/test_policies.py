"""Logging policies: deterministic ranking, Plackett-Luce, mixtures, the production ranker."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from clickrank import InputError, RankingData
from clickrank.datasets import split_queries, synthetic
from clickrank.policies import DeterministicPolicy, MixturePolicy, PlackettLuce, UniformRandom
from clickrank.policies.production import production_ranker
from clickrank.specs import make_policy


def _data(lengths, seed=0):
    rng = np.random.default_rng(seed)
    n = int(np.sum(lengths))
    qptr = np.concatenate([[0], np.cumsum(lengths)])
    return RankingData(rng.standard_normal((n, 3)), rng.integers(0, 5, n).astype(float), qptr)


def _sessions(n):
    return np.arange(n, dtype=np.uint64)


def test_deterministic_policy_sorts_by_score_and_keeps_row_order_on_ties():
    data = _data([4, 2])
    scores = np.array([1.0, 3.0, 1.0, 2.0, 0.0, 5.0])
    prep = DeterministicPolicy(scores).prepare(data, 3)
    rows, codes = prep.rank(np.array([0, 1, 0]), _sessions(3), seed=0)
    # query 0: rows 1 (3.0), 3 (2.0), then the tie 0 before 2 (row order)
    assert rows[0].tolist() == [1, 3, 0]
    # query 1 has two documents: the third slot is empty
    assert rows[1].tolist() == [5, 4, -1]
    assert rows[2].tolist() == rows[0].tolist()
    assert codes.tolist() == [0, 0, 0]
    assert prep.names == ("production",)


def test_deterministic_policy_accepts_an_object_with_predict():
    data = _data([5, 5])

    class Model:
        def predict(self, X):
            return X[:, 0]

    q = np.array([0, 1])
    by_obj = DeterministicPolicy(Model()).prepare(data, 5).rank(q, _sessions(2), 0)
    by_arr = DeterministicPolicy(data.X[:, 0]).prepare(data, 5).rank(q, _sessions(2), 0)
    np.testing.assert_array_equal(by_obj[0], by_arr[0])
    expected = np.argsort(-data.X[:5, 0], kind="stable")
    assert by_arr[0][0].tolist() == expected.tolist()


@pytest.mark.parametrize(
    "scores, match",
    [(np.zeros(3), "3 scores but the data has 10"), (np.r_[np.zeros(9), np.nan], "non-finite")],
)
def test_policy_rejects_bad_scores(scores, match):
    with pytest.raises(InputError, match=match):
        DeterministicPolicy(scores).prepare(_data([5, 5]), 3)


def test_policy_rejects_a_ranker_without_predict():
    with pytest.raises(InputError, match="predict"):
        DeterministicPolicy(object()).prepare(_data([5, 5]), 3)


def _pl_probability(perm, w):
    """Plackett-Luce probability of the full order ``perm`` with weights ``w``."""
    p, rest = 1.0, list(range(len(w)))
    for d in perm:
        p *= w[d] / sum(w[j] for j in rest)
        rest.remove(d)
    return p


def test_plackett_luce_permutation_frequencies_match_the_model():
    data = _data([3])
    scores = np.array([1.0, 0.0, -0.5])
    tau = 0.8
    n = 60_000
    rows, _ = (
        PlackettLuce(scores, temperature=tau)
        .prepare(data, 3)
        .rank(np.zeros(n, dtype=np.int64), _sessions(n), seed=3)
    )
    w = np.exp(scores / tau)
    perms = list(itertools.permutations(range(3)))
    expected = np.array([_pl_probability(p, w) for p in perms])
    code = rows[:, 0] * 9 + rows[:, 1] * 3 + rows[:, 2]
    observed = np.array([(code == a * 9 + b * 3 + c).sum() for a, b, c in perms])
    assert observed.sum() == n  # every sample is a permutation of the three rows
    se = np.sqrt(n * expected * (1 - expected))
    assert np.all(np.abs(observed - n * expected) < 4 * se), (observed, n * expected)


def test_plackett_luce_top_k_of_a_longer_list_matches_first_choice_probabilities():
    data = _data([6])
    scores = np.linspace(1.0, -1.0, 6)
    n = 40_000
    rows, _ = PlackettLuce(scores).prepare(data, 2).rank(np.zeros(n, np.int64), _sessions(n), 7)
    assert rows.shape == (n, 2)
    p1 = np.exp(scores) / np.exp(scores).sum()
    counts = np.bincount(rows[:, 0], minlength=6)
    assert np.all(np.abs(counts - n * p1) < 4 * np.sqrt(n * p1 * (1 - p1)))
    assert np.all(rows[:, 0] != rows[:, 1])


def test_plackett_luce_low_temperature_approaches_the_deterministic_ranking():
    data = _data([8, 8])
    scores = data.X[:, 0]
    q = np.array([0, 1] * 50)
    det, _ = DeterministicPolicy(scores).prepare(data, 5).rank(q, _sessions(100), 0)
    cold, _ = PlackettLuce(scores, temperature=1e-4).prepare(data, 5).rank(q, _sessions(100), 0)
    np.testing.assert_array_equal(det, cold)


def test_plackett_luce_rejects_non_positive_temperature():
    with pytest.raises(InputError, match="temperature"):
        PlackettLuce(np.zeros(10), temperature=0).prepare(_data([5, 5]), 3)


def test_stochastic_lists_do_not_depend_on_the_batch():
    data = _data([7, 4, 9])
    prep = PlackettLuce(data.X[:, 1]).prepare(data, 4)
    q = np.array([0, 1, 2, 2, 0, 1])
    s = np.array([10, 11, 12, 13, 14, 15], dtype=np.uint64)
    whole, _ = prep.rank(q, s, seed=5)
    part, _ = prep.rank(q[3:], s[3:], seed=5)
    np.testing.assert_array_equal(whole[3:], part)
    other_seed, _ = prep.rank(q, s, seed=6)
    assert not np.array_equal(whole, other_seed)


def test_uniform_random_puts_each_document_first_equally_often():
    data = _data([5])
    n = 30_000
    rows, _ = UniformRandom().prepare(data, 5).rank(np.zeros(n, np.int64), _sessions(n), 1)
    counts = np.bincount(rows[:, 0], minlength=5)
    assert stats.chisquare(counts).pvalue > 1e-4
    assert np.all(np.sort(rows, axis=1) == np.arange(5))


def test_mixture_assigns_sessions_by_weight_and_records_the_ranker():
    data = _data([6, 6])
    a = DeterministicPolicy(data.X[:, 0], name="a")
    b = DeterministicPolicy(-data.X[:, 0], name="b")
    c = UniformRandom(name="c")
    mix = MixturePolicy([a, b, c], weights=[2, 1, 1])
    prep = mix.prepare(data, 3)
    assert prep.names == ("a", "b", "c")
    n = 20_000
    q = np.tile([0, 1], n // 2)
    rows, codes = prep.rank(q, _sessions(n), seed=0)
    share = np.bincount(codes, minlength=3) / n
    p = np.array([0.5, 0.25, 0.25])
    assert np.all(np.abs(share - p) < 4 * np.sqrt(p * (1 - p) / n))
    rows_a, _ = a.prepare(data, 3).rank(q, _sessions(n), 0)
    rows_b, _ = b.prepare(data, 3).rank(q, _sessions(n), 0)
    np.testing.assert_array_equal(rows[codes == 0], rows_a[codes == 0])
    np.testing.assert_array_equal(rows[codes == 1], rows_b[codes == 1])


def test_mixture_validates_its_components():
    data = _data([4])
    p = DeterministicPolicy(data.X[:, 0], name="x")
    with pytest.raises(InputError, match="distinct"):
        MixturePolicy([p, p]).prepare(data, 2)
    with pytest.raises(InputError, match="weights"):
        MixturePolicy([p, UniformRandom()], weights=[1, -1]).prepare(data, 2)
    with pytest.raises(InputError, match="LoggingPolicy"):
        MixturePolicy([]).prepare(data, 2)


def test_production_ranker_trains_on_a_fraction_and_beats_random():
    data = synthetic(300, 20, seed=1)
    r1 = production_ranker(data, 0.05, seed=0)
    r2 = production_ranker(data, 0.05, seed=0)
    assert len(r1.train_queries_) == 20  # 5% of 300 is 15, below the floor of 20 queries
    s = r1.predict(data.X)
    np.testing.assert_array_equal(s, r2.predict(data.X))  # deterministic given the seed
    rows, _ = (
        DeterministicPolicy(r1)
        .prepare(data, 1)
        .rank(np.arange(data.n_queries), _sessions(data.n_queries), 0)
    )
    top_label = data.y[rows[:, 0]].mean()
    se = data.y.std() / np.sqrt(data.n_queries)
    assert top_label > data.y.mean() + 4 * se


def test_production_ranker_needs_labels_and_a_valid_fraction():
    data = synthetic(20, 5, seed=0)
    with pytest.raises(InputError, match="labelled"):
        production_ranker(data.with_labels(None))
    with pytest.raises(InputError, match="fraction"):
        production_ranker(data, 1.5)
    with pytest.raises(InputError, match="min_queries"):
        production_ranker(data, 0.5, min_queries=0)


@pytest.mark.parametrize(
    "n_queries, fraction, min_queries, expected",
    [
        (300, 0.05, 20, 20),  # 15 by the fraction, raised to the floor
        (300, 0.05, 1, 15),  # min_queries=1: the plain fraction
        (300, 0.2, 20, 60),  # above the floor the fraction rules
        (12, 0.01, 20, 12),  # fewer queries than the floor: all of them
        (300, 0.001, 1, 1),  # the fraction rounds to 0: still one query
    ],
)
def test_the_production_ranker_trains_on_at_least_min_queries(
    n_queries, fraction, min_queries, expected
):
    data = synthetic(n_queries, 5, seed=4)
    r = production_ranker(data, fraction, seed=3, min_queries=min_queries)
    assert len(r.train_queries_) == expected == len(np.unique(r.train_queries_))
    np.testing.assert_array_equal(r.train_qid_, np.asarray(data.qid)[r.train_queries_])
    assert r.n_queries_ == n_queries


def test_quality_is_ndcg_on_the_held_out_queries_and_on_all():
    from clickrank.metrics import ndcg
    from clickrank.policies.production import describe_quality

    data = synthetic(120, 15, seed=5)
    r = production_ranker(data, 0.1, seed=0)
    q = r.quality(data)
    held = np.setdiff1d(np.arange(data.n_queries), r.train_queries_)
    assert q["trained_on"] == 20 and q["held_out"]["queries"] == 100 == held.size
    sub = data.subset(held)
    expect = ndcg(r.predict(sub.X), sub.y, sub.qptr, k=10, empty="skip")
    assert q["held_out"]["mean"] == pytest.approx(expect.mean)
    assert q["held_out"]["n_empty"] == expect.n_empty
    assert q["held_out"]["n_used"] + q["held_out"]["n_empty"] == 100
    every = ndcg(r.predict(data.X), data.y, data.qptr, k=10, empty="skip")
    assert q["all"]["mean"] == pytest.approx(every.mean)
    # the training queries flatter it: all-query NDCG is not below the held-out one here
    trained = data.subset(r.train_queries_)
    fit = ndcg(r.predict(trained.X), trained.y, trained.qptr, k=10, empty="skip").mean
    assert fit > q["held_out"]["mean"]
    line = describe_quality(q)
    assert line.startswith("production ranker: trained on 20 of 120 queries; NDCG@10 ")
    assert f"on the other 100 ({q['all']['mean']:.3f} on all" in line
    # other queries (none trained on; queries are matched by id): one figure
    train, other = split_queries(synthetic(160, 15, seed=6), [120, 40], seed=0)
    q2 = production_ranker(train, 0.1, seed=0).quality(other, k=5)
    assert q2["trained_on"] == 0 and q2["metric"] == "ndcg@5"
    assert describe_quality(q2).startswith("production ranker: NDCG@5 ")
    # every query trained on: the figure is said to be optimistic
    small = synthetic(8, 6, seed=7)
    q3 = production_ranker(small, 0.5, seed=0).quality(small)
    assert q3["held_out"] == {"queries": 0, "n_empty": 0, "n_used": 0, "mean": None}
    assert "no held-out query: an optimistic figure" in describe_quality(q3)


def test_make_policy_kinds():
    data = synthetic(30, 6, seed=0)
    assert make_policy("random", data).names == ("random",)
    oracle = make_policy("oracle", data).prepare(data, 1)
    rows, _ = oracle.rank(np.arange(30), _sessions(30), 0)
    top = np.maximum.reduceat(data.y, data.qptr[:-1])
    np.testing.assert_array_equal(data.y[rows[:, 0]], top)
    with pytest.raises(InputError, match="policy"):
        make_policy("best", data)


@pytest.mark.parametrize(
    "n_queries, n_docs", [(5, 2), (5, 5), (30, 1), (1, 1), (60, 10), (3, 2), (2, 3)]
)
def test_the_production_ranker_trains_on_tiny_data_or_keeps_the_data_order(n_queries, n_docs):
    data = synthetic(n_queries, n_docs, seed=1)
    ranker = production_ranker(data, 0.01, seed=0)
    scores = ranker.predict(data.X)
    assert scores.shape == (data.n_docs,) and np.all(np.isfinite(scores))
    trained = data.subset(ranker.train_queries_)
    assert trained.n_queries == min(n_queries, 20)
    if trained.n_docs < 2:
        assert ranker.model_ is None and "keeps the data order" in ranker.note_
        assert np.all(scores == 0)
    elif trained.n_docs <= 6:  # LightGBM cannot split 6 documents with 5 per leaf: retried
        assert ranker.model_ is not None and "retrained with 1" in ranker.note_
    elif n_docs >= 10:
        assert ranker.note_ is None  # enough data: the settings are used as they are


@pytest.mark.parametrize("n_queries, n_docs, top_k", [(5, 12, 10), (5, 3, 3), (30, 1, 1)])
def test_simulate_on_a_tiny_letor_file_works(tmp_path, n_queries, n_docs, top_k):
    from click.testing import CliRunner

    from clickrank.cli import cli
    from clickrank.datasets import save_letor

    path = save_letor(synthetic(n_queries, n_docs, seed=1), tmp_path / "tiny.txt")
    res = CliRunner().invoke(
        cli,
        [
            "simulate",
            "--data",
            str(path),
            "--sessions",
            "300",
            "--top-k",
            str(top_k),
            "--out",
            str(tmp_path / "log.parquet"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "300 sessions" in res.stdout


def test_ranker_scores_gives_lambdamart_the_data_and_others_the_features():
    from clickrank.lambdamart import LambdaMART
    from clickrank.ranking import ranker_scores

    data = synthetic(30, 5, seed=2)
    model = LambdaMART(n_estimators=3, seed=0).fit(data)
    assert np.array_equal(ranker_scores(model, data), model.predict(data.X))

    seen = []

    class Features:
        def predict(self, X):
            seen.append(X)
            return X[:, 0]

    assert np.array_equal(ranker_scores(Features(), data), data.X[:, 0].astype(np.float64))
    assert seen[0] is data.X
    with pytest.raises(InputError, match="ranker 'x' gives 3 scores but the data has 150"):
        ranker_scores([1.0, 2.0, 3.0], data, name="ranker 'x'")
    with pytest.raises(InputError, match="non-finite score"):
        ranker_scores(np.full(data.n_docs, np.nan), data)


def test_policies_no_longer_hold_the_production_ranker():
    import clickrank
    import clickrank.policies as policies
    from clickrank.policies.production import ProductionRanker
    from clickrank.ranking import ranker_scores

    assert not hasattr(policies, "ProductionRanker")
    assert policies.policy_scores is ranker_scores  # the old name, for callers not yet moved
    assert clickrank.production_ranker(synthetic(25, 5, seed=0), 0.5).__class__ is ProductionRanker
