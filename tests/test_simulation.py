"""Counter-based randomness, simulate(), interventions, streaming output and the CLI."""

from __future__ import annotations

import numba
import numpy as np
import polars as pl
import pytest
from click.testing import CliRunner
from polars.testing import assert_frame_equal
from scipy import stats

from clickrank import InputError, RankingData
from clickrank._core._random import (
    STREAM_QUERY,
    session_bernoulli,
    session_integers,
    session_uniforms,
)
from clickrank.clicklog import read_log, validate_log
from clickrank.clickmodels import ClickMatrix, make_click_model
from clickrank.datasets import synthetic
from clickrank.policies import (
    DeterministicPolicy,
    LoggingPolicy,
    MixturePolicy,
    PlackettLuce,
    PreparedPolicy,
    UniformRandom,
)
from clickrank.simulation import (
    FairPairs,
    Randomize,
    RandPair,
    Swap,
    _grade_table,
    _query_sampler,
    _sample_queries,
    sample_clicks,
    simulate,
)

# -- the counter-based generator --------------------------------------------------------


def test_uniforms_are_uniform_ks_and_chi_square():
    u = session_uniforms(1, np.arange(20_000), 10, stream=3).ravel()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert stats.kstest(u, "uniform").pvalue > 1e-3
    counts = np.bincount((u * 100).astype(int), minlength=100)
    assert stats.chisquare(counts).pvalue > 1e-3
    # 53-bit doubles: every value is a multiple of 2**-53
    assert np.all(u * 2.0**53 == np.floor(u * 2.0**53))


def test_uniforms_are_uncorrelated_across_sessions_draws_and_streams():
    n = 50_000
    u = session_uniforms(0, np.arange(n + 1), 2, stream=1)
    v = session_uniforms(0, np.arange(n + 1), 2, stream=2)
    w = session_uniforms(1, np.arange(n + 1), 2, stream=1)
    bound = 4 / np.sqrt(n)  # 4 SE of a correlation coefficient under independence
    pairs = [
        (u[:-1, 0], u[1:, 0]),  # neighbouring sessions
        (u[:, 0], u[:, 1]),  # neighbouring draws of a session
        (u[:, 0], v[:, 0]),  # two streams
        (u[:, 0], w[:, 0]),  # two seeds
    ]
    for a, b in pairs:
        assert abs(np.corrcoef(a, b)[0, 1]) < bound


def test_uniforms_depend_only_on_seed_session_and_stream():
    s = np.array([7, 3, 1_000_000_007, 3], dtype=np.uint64)
    a = session_uniforms(5, s, 6, stream=9)
    np.testing.assert_array_equal(a, session_uniforms(5, s, 6, stream=9))
    np.testing.assert_array_equal(a[1], a[3])  # same session, same draws
    np.testing.assert_array_equal(a[2], session_uniforms(5, s[2:3], 6, stream=9)[0])
    np.testing.assert_array_equal(a[:, 2:], session_uniforms(5, s, 4, stream=9, offset=2))
    assert not np.array_equal(a, session_uniforms(6, s, 6, stream=9))
    assert not np.array_equal(a, session_uniforms(5, s, 6, stream=10))


def test_session_integers_are_uniform_per_bound():
    high = np.tile([3, 7], 20_000)
    x = session_integers(2, np.arange(40_000), high, stream=4)[:, 0]
    assert np.all((x >= 0) & (x < high))
    for h in (3, 7):
        assert stats.chisquare(np.bincount(x[high == h], minlength=h)).pvalue > 1e-3


def test_bad_seed_is_rejected():
    with pytest.raises(InputError, match="seed"):
        session_uniforms(-1, [0], 1, stream=0)


@pytest.mark.parametrize(("step", "offset"), [(1, 0), (2, 0), (3, 5)])
def test_session_bernoulli_is_the_thresholded_session_uniforms(step, offset):
    rng = np.random.default_rng(step)
    sessions = np.array([9, 0, 123_456_789_012, 9, 4], dtype=np.uint64)
    p = rng.random((5, 7))
    p[0, :3] = [0.0, 1.0, 1.5]  # never, always, always
    u = session_uniforms(2, sessions, 7 * step, stream=103, offset=offset)[:, ::step]
    got = session_bernoulli(2, sessions, p, stream=103, step=step, offset=offset)
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, u < p)
    np.testing.assert_array_equal(got[0, :3], [False, True, True])
    with pytest.raises(InputError, match="rows"):
        session_bernoulli(2, sessions, p[:3], stream=103)
    with pytest.raises(InputError, match="step"):
        session_bernoulli(2, sessions, p, stream=103, step=0)


# -- simulate ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data() -> RankingData:
    return synthetic(60, 15, seed=0)


def _pbm(eta=1.0):
    return make_click_model("pbm", eta=eta)


def test_string_ids_give_the_numeric_log_under_their_names():
    """String query and doc ids take polars' path (the rows are kept and gathered later):
    the same sessions, positions, clicks and labels as numeric ids, empty slots included."""
    d = synthetic(30, 12, seed=2)
    lens = np.where(np.arange(30) % 4 == 0, 3, 12)  # some lists shorter than top_k
    keep = np.concatenate([np.arange(a, a + n) for a, n in zip(d.qptr[:-1], lens, strict=True)])
    qptr = np.concatenate([[0], np.cumsum(lens)])
    num = RankingData(d.X[keep], d.y[keep], qptr, qid=d.qid, doc=d.doc[keep])
    named = RankingData(num.X, num.y, qptr, qid=np.array([f"q{i}" for i in num.qid]),
                        doc=np.array([f"d{i}" for i in num.doc]))  # fmt: skip
    kw = dict(policy=num.X[:, 0], click_model="pbm", n_sessions=3000, top_k=5,
              interventions=[Swap(0.3)], seed=4)  # fmt: skip
    a = simulate(num, **kw)
    b = simulate(named, chunk_size=777, n_jobs=2, **kw)
    assert a.height == b.height < 3000 * 5
    assert (("d" + a["doc"].cast(pl.String)) == b["doc"]).all()
    assert (("q" + a["query"].cast(pl.String)) == b["query"]).all()
    cols = ["session", "position", "click", "label"]
    assert_frame_equal(a.select(cols), b.select(cols))


class _RowsOnly(LoggingPolicy):
    """``policy`` without its fixed lists: the simulator takes the row path."""

    def __init__(self, policy: LoggingPolicy) -> None:
        self.policy = policy

    @property
    def names(self) -> tuple[str, ...]:
        return self.policy.names

    def prepare(self, data: RankingData, top_k: int) -> PreparedPolicy:
        inner = self.policy.prepare(data, top_k)

        class Rows(PreparedPolicy):
            names, top_k = inner.names, inner.top_k

            def rank(self, *args):
                return inner.rank(*args)

        return Rows()


@pytest.mark.parametrize("ids", ["numeric", "string"])
def test_fixed_lists_give_the_log_of_their_rows(ids):
    """Fixed rankings' sessions copy their list's cells (``PreparedPolicy.lists`` and
    ``pick``) and the interventions then permute the cells; the same policies without
    ``lists`` take the row path (rows, then each row's cells). Same log, to the bit, for
    one ranking and for a (nested) mixture of rankings, with lists shorter than
    ``top_k``, every intervention and two threads."""
    d = synthetic(40, 12, seed=5)
    lens = np.where(np.arange(40) % 3 == 0, 4, 12)
    keep = np.concatenate([np.arange(a, a + n) for a, n in zip(d.qptr[:-1], lens, strict=True)])
    qptr = np.concatenate([[0], np.cumsum(lens)])
    qid, doc = d.qid * 3 - 7, d.doc[keep] * 5 - 2  # ids that are not row numbers, -2 included
    if ids == "string":
        qid, doc = np.array([f"q{i}" for i in qid]), np.array([f"d{i}" for i in doc])
    d = RankingData(d.X[keep], d.y[keep], qptr, qid=qid, doc=doc)
    a, b, c = (DeterministicPolicy(d.X[:, j], name=n) for j, n in enumerate("abc"))
    mixed = MixturePolicy([a, MixturePolicy([b, c], weights=[1, 3])], weights=[2, 1])
    rows = MixturePolicy([_RowsOnly(a), MixturePolicy([_RowsOnly(b), _RowsOnly(c)],
                                                      weights=[1, 3])], weights=[2, 1])  # fmt: skip
    prepared = mixed.prepare(d, 6)
    assert prepared.lists.shape == (3 * 40, 6) and rows.prepare(d, 6).lists is None
    q, sess = np.arange(300) % 40, np.arange(300, dtype=np.uint64)
    picked, codes = prepared.pick(q, sess, 3)
    listed, codes_of_rank = prepared.rank(q, sess, 3)
    np.testing.assert_array_equal(prepared.lists[picked], listed)
    np.testing.assert_array_equal(codes, codes_of_rank)
    assert set(codes.tolist()) == {0, 1, 2}
    every = [Swap(0.2), RandPair(0.1), Randomize(0.1, k=5), FairPairs(0.1)]
    kw = dict(click_model="dbn", n_sessions=4000, top_k=6, seed=9, chunk_size=900,
              interventions=every)  # fmt: skip
    for fixed, by_rows in ((a, _RowsOnly(a)), (mixed, rows)):
        log = simulate(d, policy=fixed, **kw)
        assert log.height < 4000 * 6 and (log["intervention"] != "none").mean() > 0.3
        assert_frame_equal(log, simulate(d, policy=by_rows, n_jobs=2, **kw))


def test_logs_do_not_depend_on_chunk_size_and_differ_by_seed(data):
    policy = MixturePolicy([PlackettLuce(data.X[:, 0], name="pl"), UniformRandom()])
    kw = dict(
        policy=policy,
        click_model=make_click_model("dbn"),
        n_sessions=5000,
        top_k=8,
        interventions=[Swap(0.1), RandPair(0.1, pivot=None), Randomize(0.1, k=4)],
    )
    small = simulate(data, seed=11, chunk_size=1_000, **kw)
    big = simulate(data, seed=11, chunk_size=1_000_000, **kw)
    assert_frame_equal(small, big)
    threads = numba.get_num_threads()
    assert_frame_equal(simulate(data, seed=11, chunk_size=700, n_jobs=2, **kw), small)
    assert numba.get_num_threads() == threads  # the caller's thread count is restored
    with pytest.raises(InputError, match="n_jobs"):
        simulate(data, seed=11, n_jobs=0, **kw)
    other = simulate(data, seed=12, chunk_size=1_000, **kw)
    assert small.height == other.height
    assert not small.equals(other)
    # a longer run starts with the same sessions
    longer = simulate(data, seed=11, **{**kw, "n_sessions": 6000})
    assert_frame_equal(longer.head(small.height), small)
    tail = simulate(data, seed=11, first_session=5000, **{**kw, "n_sessions": 1000})
    assert_frame_equal(tail, longer.tail(longer.height - small.height))
    validate_log(small)


class _Generic:
    """A click model seen through the bare protocol (no ``independent_clicks``)."""

    def __init__(self, model):
        self.model = model
        self.n_uniforms = model.n_uniforms

    def sample(self, labels, u):
        return self.model.sample(labels, u)


def _ragged(y_scale: float = 1.0, seed: int = 0) -> RankingData:
    """Queries of 3..12 documents with whole labels 0..4 (times ``y_scale``)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 13, 80)
    n = int(lengths.sum())
    qptr = np.concatenate([[0], np.cumsum(lengths)])
    return RankingData(rng.standard_normal((n, 3)), rng.integers(0, 5, n) * y_scale, qptr)


INDEPENDENT = {
    "pbm": make_click_model("pbm"),
    "pbm-binarized": make_click_model(
        "pbm", eta=2.0, attractiveness={"kind": "binarized", "threshold": 2}
    ),
    "trust": make_click_model("trust"),
    "matrix": ClickMatrix(np.random.default_rng(5).random((5, 10))),
}


def _fused_run(d: RankingData) -> dict:
    """The run the fused-versus-generic tests compare: stochastic lists, two interventions."""
    return dict(
        policy=PlackettLuce(d.X[:, 0]),
        n_sessions=4000,
        top_k=10,
        seed=21,
        interventions=[Swap(0.2), FairPairs(0.2)],
    )


# whole grades (probabilities from a grade table) or half grades (computed per chunk)
FUSED_CASES = [(name, 1.0) for name in INDEPENDENT] + [("pbm", 0.5), ("trust", 0.5)]


@pytest.mark.parametrize(("name", "y_scale"), FUSED_CASES)
def test_fused_clicks_are_bit_identical_to_the_generic_path(name, y_scale):
    model = INDEPENDENT[name]
    d = _ragged(y_scale)
    assert model.independent_clicks is True
    assert (_grade_table(model, d.y, 10) is None) == (y_scale != 1.0)
    kw = _fused_run(d)
    fused = simulate(d, click_model=model, chunk_size=900, **kw)
    generic = simulate(d, click_model=_Generic(model), **kw)
    assert_frame_equal(fused, generic)
    assert_frame_equal(simulate(d, click_model=model, chunk_size=100_000, **kw), fused)
    assert fused["label"].is_null().sum() == 0 and 0 < fused["click"].mean() < 1


# the cascade family and UBM: their own kernel on grade tables and lazily hashed draws
CHAINED = ("cascade", "dcm", "dbn", "sdbn", "ubm")


@pytest.mark.parametrize("name", CHAINED)
def test_fused_cascade_and_ubm_clicks_are_bit_identical_to_model_sample(name):
    model, d = make_click_model(name), _ragged()
    kw = _fused_run(d)
    fused = simulate(d, click_model=model, chunk_size=900, **kw)
    assert_frame_equal(fused, simulate(d, click_model=_Generic(model), **kw))
    assert_frame_equal(simulate(d, click_model=model, n_jobs=2, **kw), fused)
    assert 0 < fused["click"].mean() < 1
    labels = np.where(np.arange(10) < 7, np.arange(10) % 5, np.nan)[None].repeat(50, 0)
    np.testing.assert_array_equal(
        sample_clicks(model, labels, np.arange(50), 3),
        sample_clicks(_Generic(model), labels, np.arange(50), 3),
    )


def test_uniform_query_choice_is_floor_of_u_times_the_number_of_queries(data):
    sessions = np.arange(3000, dtype=np.uint64) * 11
    kind, table = _query_sampler(data, None)
    assert kind == "uniform"
    u = session_uniforms(6, sessions, 1, STREAM_QUERY)[:, 0]
    expected = table[np.minimum(np.floor(u * len(table)).astype(np.int64), len(table) - 1)]
    got = _sample_queries(6, sessions, (kind, table))
    np.testing.assert_array_equal(got, expected)
    assert stats.chisquare(np.bincount(got, minlength=data.n_queries)).pvalue > 1e-3


def test_only_models_with_independent_cells_declare_it_and_whole_grades_are_fused(data):
    for name in (*CHAINED, "pbm-population"):
        assert getattr(make_click_model(name), "independent_clicks", False) is False

    for model in (_pbm(), *(make_click_model(name) for name in CHAINED)):

        class NoSample(type(model)):
            def sample(self, labels, u):
                raise AssertionError("the fused path must not materialize uniforms")

        log = simulate(data, policy=UniformRandom(), click_model=NoSample(), n_sessions=50)
        assert log.height == 500


def test_fused_path_raises_only_for_displayed_labels_the_model_rejects():
    # grade 5 exceeds the default Graded(max_label=4); it is never shown in the top 3
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, 60).astype(float)
    y[9::10] = 5.0  # the last document of each query
    d = RankingData(rng.standard_normal((60, 2)), y, np.arange(0, 61, 10))
    score = -np.tile(np.arange(10.0), 6)  # the first rows of a query rank highest
    kw = dict(policy=DeterministicPolicy(score), n_sessions=500, top_k=3, seed=1)
    assert _grade_table(_pbm(), d.y, 3) is None
    assert_frame_equal(
        simulate(d, click_model=_pbm(), **kw), simulate(d, click_model=_Generic(_pbm()), **kw)
    )
    for model in (_pbm(), _Generic(_pbm())):
        with pytest.raises(InputError, match="max_label"):
            simulate(d, click_model=model, **{**kw, "top_k": 10})


def test_log_schema_and_contents(data):
    log = simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=_pbm(),
        n_sessions=500,
        top_k=5,
        seed=0,
    )
    assert log.columns == [
        "session",
        "query",
        "position",
        "doc",
        "click",
        "intervention",
        "ranker",
        "label",
        "swap_pivot",
        "swap_k",
    ]
    assert log.height == 500 * 5
    assert log["session"].unique().len() == 500
    assert set(log["intervention"].cast(pl.String)) == {"none"}
    assert set(log["ranker"].cast(pl.String)) == {"production"}
    # label is the true label of the shown document
    q = log["query"].to_numpy()
    rows = data.qptr[q] + log["doc"].to_numpy()
    np.testing.assert_array_equal(log["label"].to_numpy(), data.y[rows])


def test_short_queries_show_fewer_positions():
    rng = np.random.default_rng(0)
    lengths = np.array([2, 7, 4])
    qptr = np.concatenate([[0], np.cumsum(lengths)])
    d = RankingData(
        rng.standard_normal((13, 2)),
        rng.integers(0, 5, 13),
        qptr,
        qid=np.array(["a", "b", "c"]),
        doc=np.array([f"d{i}" for i in range(13)]),
    )
    log = simulate(
        d,
        policy=UniformRandom(),
        click_model=_pbm(),
        n_sessions=300,
        top_k=5,
        interventions=Randomize(0.5),
        seed=0,
    )
    validate_log(log)
    per = log.group_by("query").agg(
        n=pl.len() / pl.col("session").n_unique(), mx=pl.col("position").max()
    )
    got = dict(zip(per["query"], per["mx"], strict=True))
    assert got == {"a": 2, "b": 5, "c": 4}
    assert log.schema["query"] == pl.String and log.schema["doc"] == pl.String
    with pytest.raises(InputError, match=r"top_k=8 is larger than the longest query.*7"):
        simulate(d, policy=UniformRandom(), click_model=_pbm(), n_sessions=10, top_k=8)


def test_query_frequency_is_respected(data):
    freq = np.zeros(data.n_queries)
    freq[[3, 10, 20]] = [1, 2, 5]
    log = simulate(
        data,
        policy=UniformRandom(),
        click_model=_pbm(),
        n_sessions=8000,
        top_k=1,
        query_frequency=freq,
        seed=0,
    )
    counts = log["query"].value_counts().sort("query")
    assert counts["query"].to_list() == [3, 10, 20]
    assert stats.chisquare(counts["count"].to_numpy(), 8000 * np.array([1, 2, 5]) / 8).pvalue > 1e-3


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_sessions": 0}, "n_sessions"),
        ({"top_k": 0}, "top_k"),
        ({"seed": -3}, "seed"),
        ({"interventions": Swap(1.5)}, "Swap.fraction"),
        ({"interventions": [Swap(0.6), Randomize(0.6)]}, "sum to at most 1"),
        ({"interventions": Swap(0.1, k=11)}, "Swap.k"),
        ({"interventions": Randomize(0.1, k=1)}, "Randomize.k"),
        ({"interventions": "swap"}, "interventions"),
        ({"click_model": "nope"}, "click model"),
        ({"click_model": object()}, "click_model"),
        ({"policy": np.zeros(3)}, "ranker 'production' gives 3 scores"),
        ({"query_frequency": np.ones(3)}, "query_frequency"),
        ({"query_frequency": -np.ones(60)}, "query_frequency"),
    ],
)
def test_bad_arguments_are_named(data, kwargs, match):
    args = dict(policy=UniformRandom(), click_model=_pbm(), n_sessions=10, top_k=10)
    args.update(kwargs)
    with pytest.raises(InputError, match=match):
        simulate(data, **args)


def test_unlabelled_data_is_rejected(data):
    with pytest.raises(InputError, match="no labels"):
        simulate(data.with_labels(None), policy=UniformRandom(), click_model=_pbm(), n_sessions=5)


# -- interventions ----------------------------------------------------------------------


def _dense(log: pl.DataFrame, column: str, K: int) -> np.ndarray:
    return log.sort("session", "position")[column].to_numpy().reshape(-1, K)


def test_swap_exchanges_rank_1_and_k_in_the_chosen_fraction(data):
    K, n, f = 8, 6000, 0.3
    base = dict(
        policy=DeterministicPolicy(data.X[:, 0]), click_model=_pbm(), n_sessions=n, top_k=K, seed=4
    )
    plain = simulate(data, **base)
    swapped = simulate(data, interventions=Swap(f), **base)
    d0, d1 = _dense(plain, "doc", K), _dense(swapped, "doc", K)
    is_swap = _dense(swapped, "intervention", K)[:, 0] == "swap"
    k = _dense(swapped, "swap_k", K)[:, 0].astype(int)
    assert abs(is_swap.mean() - f) < 4 * np.sqrt(f * (1 - f) / n)
    assert np.all(k[is_swap] >= 2) and np.all(k[~is_swap] == 0)
    idx = np.flatnonzero(is_swap)
    expect = d0.copy()
    expect[idx, 0] = d0[idx, k[idx] - 1]
    expect[idx, k[idx] - 1] = d0[idx, 0]
    np.testing.assert_array_equal(d1, expect)
    # k is uniform over 2..K
    assert stats.chisquare(np.bincount(k[idx] - 2, minlength=K - 1)).pvalue > 1e-3


def test_fixed_swap_k(data):
    log = simulate(
        data,
        policy=UniformRandom(),
        click_model=_pbm(),
        n_sessions=400,
        top_k=6,
        interventions=Swap(1.0, k=4),
        seed=0,
    )
    assert set(log["swap_k"].unique()) == {4} and set(log["swap_pivot"].unique()) == {1}


def test_randpair_swaps_a_uniform_pair(data):
    K, n = 5, 20_000
    base = dict(
        policy=DeterministicPolicy(data.X[:, 0]), click_model=_pbm(), n_sessions=n, top_k=K, seed=1
    )
    plain = _dense(simulate(data, **base), "doc", K)
    log = simulate(data, interventions=RandPair(1.0, pivot=None), **base)
    a = _dense(log, "swap_pivot", K)[:, 0].astype(int)
    b = _dense(log, "swap_k", K)[:, 0].astype(int)
    assert np.all((1 <= a) & (a < b) & (b <= K))
    pair = (a - 1) * K + (b - 1)
    observed = np.bincount(pair, minlength=K * K)[
        [i * K + j for i in range(K) for j in range(i + 1, K)]
    ]
    assert stats.chisquare(observed).pvalue > 1e-3  # all K(K-1)/2 pairs equally likely
    docs = _dense(log, "doc", K)
    r = np.arange(n)
    np.testing.assert_array_equal(docs[r, a - 1], plain[r, b - 1])
    np.testing.assert_array_equal(docs[r, b - 1], plain[r, a - 1])
    pivot1 = simulate(data, interventions=RandPair(1.0), **{**base, "n_sessions": 500})
    assert set(pivot1["swap_pivot"].unique()) == {1}


def test_randomize_is_a_uniform_permutation_of_the_top_k(data):
    K, k, n = 8, 4, 12_000
    base = dict(
        policy=DeterministicPolicy(data.X[:, 0]), click_model=_pbm(), n_sessions=n, top_k=K, seed=2
    )
    plain = _dense(simulate(data, **base), "doc", K)
    log = simulate(data, interventions=Randomize(1.0, k=k), **base)
    docs = _dense(log, "doc", K)
    np.testing.assert_array_equal(docs[:, k:], plain[:, k:])  # below k: untouched
    np.testing.assert_array_equal(np.sort(docs[:, :k], 1), np.sort(plain[:, :k], 1))
    # the production rank-1 document lands on each of the top k positions equally often
    where = np.argmax(docs[:, :k] == plain[:, [0]], axis=1)
    assert stats.chisquare(np.bincount(where, minlength=k)).pvalue > 1e-3
    # and whole permutations of the top k are uniform (k! = 24 cells)
    order = np.argsort(np.argsort(docs[:, :k], 1), 1) @ (k ** np.arange(k))
    _, counts = np.unique(order, return_counts=True)
    assert len(counts) == 24 and stats.chisquare(counts).pvalue > 1e-3


def _fair_pairs_log(data, n, K, fraction, seed, chunk_size=200_000):
    base = dict(
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=_pbm(),
        n_sessions=n,
        top_k=K,
        seed=seed,
        chunk_size=chunk_size,
    )
    plain = simulate(data, **base)
    return plain, simulate(data, interventions=FairPairs(fraction), **base)


def test_fair_pairs_swaps_disjoint_adjacent_pairs_with_probability_one_half(data):
    K, n, f = 9, 12_000, 0.4
    plain, log = _fair_pairs_log(data, n, K, f, seed=6)
    d0, d1 = _dense(plain, "doc", K), _dense(log, "doc", K)
    fair = _dense(log, "intervention", K)[:, 0] == "fairpairs"
    start = _dense(log, "swap_pivot", K)[:, 0].astype(int)
    last = _dense(log, "swap_k", K)[:, 0].astype(int)
    # the chosen fraction of sessions, the others untouched and unmarked
    assert abs(fair.mean() - f) < 4 * np.sqrt(f * (1 - f) / n)
    np.testing.assert_array_equal(d1[~fair], d0[~fair])
    assert np.all(start[~fair] == 0) and np.all(last[~fair] == 0)
    # pairing from rank 1 or 2 with probability 1/2; K = 9 gives pairs up to 8 or 9
    s, m = start[fair], fair.sum()
    assert set(np.unique(s)) == {1, 2}
    assert abs((s == 1).mean() - 0.5) < 4 * np.sqrt(0.25 / m)
    np.testing.assert_array_equal(last[fair], np.where(s == 1, 8, 9))
    # every result stays or moves to the other member of its pair
    ranks = np.arange(1, K + 1)[None, :]
    in_pair = (ranks >= s[:, None]) & (ranks <= last[fair][:, None])
    upper = in_pair & ((ranks - s[:, None]) % 2 == 0)
    partner = np.where(upper, ranks + 1, np.where(in_pair, ranks - 1, ranks)) - 1
    a, b = d0[fair], d1[fair]
    moved = a != b
    assert not np.any(moved & ~in_pair)  # unpaired ranks never move
    np.testing.assert_array_equal(
        np.where(moved, b, 0), np.where(moved, np.take_along_axis(a, partner, 1), 0)
    )
    # the two members of a pair move together; each pair is swapped with probability 1/2
    swapped = moved[:, :-1][upper[:, :-1]]
    np.testing.assert_array_equal(moved[:, 1:][upper[:, :-1]], swapped)
    assert abs(swapped.mean() - 0.5) < 4 * np.sqrt(0.25 / swapped.size)
    # and independently of each other: neighbouring pairs of a session are uncorrelated
    pairs_of = moved[:, 0:8:2][s == 1]  # pairs (1,2), (3,4), (5,6), (7,8)
    corr = np.corrcoef(pairs_of.T.astype(float))[np.triu_indices(4, 1)]
    assert np.all(np.abs(corr) < 4 / np.sqrt(len(pairs_of)))
    validate_log(log)


def test_fair_pairs_logs_do_not_depend_on_chunk_size(data):
    _, small = _fair_pairs_log(data, 3000, 6, 0.5, seed=3, chunk_size=700)
    _, big = _fair_pairs_log(data, 3000, 6, 0.5, seed=3)
    assert_frame_equal(small, big)
    mixed = dict(
        policy=UniformRandom(),
        click_model=_pbm(),
        n_sessions=3000,
        top_k=6,
        seed=3,
        interventions=[Swap(0.2), FairPairs(0.3), Randomize(0.1)],
    )
    assert_frame_equal(
        simulate(data, chunk_size=500, **mixed), simulate(data, chunk_size=10_000, **mixed)
    )


def test_fair_pairs_on_short_lists():
    lengths = np.array([1, 2, 3])
    qptr = np.concatenate([[0], np.cumsum(lengths)])
    d = RankingData(np.zeros((6, 1)), np.arange(6) % 3, qptr)
    log = simulate(
        d,
        policy=UniformRandom(),
        click_model=_pbm(),
        n_sessions=2000,
        top_k=3,
        interventions=FairPairs(1.0),
        seed=1,
    )
    first = log.filter(pl.col("position") == 1)
    per = (
        first.group_by("query", "intervention", "swap_pivot", "swap_k")
        .len()
        .with_columns(pl.col("intervention").cast(pl.String))
    )
    cells = {tuple(r[:4]) for r in per.rows()}
    # one result: nothing to pair; two results: paired only from rank 1; three: (1,2) or (2,3)
    assert cells == {
        (0, "none", 0, 0),
        (1, "fairpairs", 1, 2),
        (1, "none", 0, 0),
        (2, "fairpairs", 1, 2),
        (2, "fairpairs", 2, 3),
    }, cells


def test_pbm_swap_ctr_ratio_recovers_theta_k_over_theta_1():
    data = synthetic(200, 20, seed=3)
    K, eta = 6, 1.0
    model = _pbm(eta)
    log = simulate(
        data,
        policy=DeterministicPolicy(data.y, name="oracle"),
        click_model=model,
        n_sessions=150_000,
        top_k=K,
        interventions=Swap(0.6),
        seed=5,
    )
    ctl = log.filter(pl.col("intervention") == "none", pl.col("position") == 1)["click"]
    p1, n1 = ctl.mean(), ctl.len()
    theta = model.propensities(K)
    for k in range(2, K + 1):
        sw = log.filter(pl.col("swap_k") == k, pl.col("position") == k)["click"]
        pk, nk = sw.mean(), sw.len()
        ratio = pk / p1
        se = ratio * np.sqrt((1 - pk) / (pk * nk) + (1 - p1) / (p1 * n1))
        assert abs(ratio - theta[k - 1] / theta[0]) < 4 * se, (k, ratio, se)


def test_pbm_full_randomization_gives_ctr_proportional_to_theta():
    data = synthetic(200, 20, seed=4)
    K = 6
    model = _pbm(1.5)
    log = simulate(
        data,
        policy=DeterministicPolicy(data.y, name="oracle"),
        click_model=model,
        n_sessions=100_000,
        top_k=K,
        interventions=Randomize(1.0),
        seed=8,
    )
    clicks = _dense(log, "click", K)
    ctr, n = clicks.mean(0), clicks.shape[0]
    theta = model.propensities(K)
    ratio = ctr / ctr[0]
    # delta method with the within-session covariance of the two click indicators
    cov = np.cov(clicks.T.astype(float))
    rel_var = np.diag(cov) / ctr**2 + cov[0, 0] / ctr[0] ** 2 - 2 * cov[0] / (ctr * ctr[0])
    se = ratio * np.sqrt(rel_var / n)
    assert np.all(np.abs(ratio - theta / theta[0])[1:] < 4 * se[1:]), (ratio, theta)


@pytest.mark.parametrize("name", ["pbm", "trust", "cascade", "dcm", "dbn", "sdbn", "ubm"])
def test_ctr_per_position_matches_exact_click_probabilities(data, name):
    K, n = 8, 30_000
    model = make_click_model(name)
    log = simulate(
        data,
        policy=PlackettLuce(data.X[:, 0]),
        click_model=model,
        n_sessions=n,
        top_k=K,
        interventions=Swap(0.2),
        seed=9,
    )
    labels = _dense(log, "label", K)
    clicks = _dense(log, "click", K)
    p = model.click_probabilities(labels)
    expected, observed = p.sum(0), clicks.sum(0)
    se = np.sqrt((p * (1 - p)).sum(0))
    assert np.all(np.abs(observed - expected) < 4 * se), (observed, expected, se)


# -- streaming to parquet ---------------------------------------------------------------


def test_streamed_log_equals_the_in_memory_log(data, tmp_path):
    kw = dict(
        policy=PlackettLuce(data.X[:, 0]),
        click_model=_pbm(),
        n_sessions=3000,
        top_k=6,
        interventions=Swap(0.2),
        seed=3,
    )
    mem = simulate(data, **kw)
    for out in (tmp_path / "log.parquet", tmp_path / "logdir"):
        lazy = simulate(data, chunk_size=700, out=out, **kw)
        assert isinstance(lazy, pl.LazyFrame)
        assert_frame_equal(lazy.collect(), mem, categorical_as_str=True)
        assert_frame_equal(read_log(out, lazy=False), mem, categorical_as_str=True)
    with pytest.raises(InputError, match="exists"):
        simulate(data, out=tmp_path / "log.parquet", **kw)


def _device_context():
    """Phones that read the top (η = 2) and desktops that read far (η = 0.5), 30 % phones."""
    from clickrank.clickmodels import PBM, PowerLaw
    from clickrank.simulation import Context

    return Context(
        "device",
        {"phone": 0.3, "desktop": 0.7},
        {"phone": PBM(PowerLaw(2.0)), "desktop": PBM(PowerLaw(0.5))},
    )


@pytest.mark.parametrize("with_context", [False, True], ids=["no-context", "context"])
def test_log_files_have_the_same_bytes_for_any_chunk_size(
    data, tmp_path, monkeypatch, with_context
):
    """What the docs promise: same seed, same bytes, whatever ``chunk_size`` or ``n_jobs``
    (the parquet sink pulls the chunks on polars' threads), with or without a context."""
    from clickrank.simulation import writer

    monkeypatch.setattr(writer, "PART_SESSIONS", 1000)  # several part files
    monkeypatch.setattr(writer, "ROW_GROUP_ROWS", 2500)  # several row groups
    kw = dict(
        policy=PlackettLuce(data.X[:, 0]),
        click_model=_pbm(),
        n_sessions=3500,
        top_k=6,
        interventions=[Swap(0.2)],
        seed=3,
        **({"context": _device_context()} if with_context else {}),
    )
    files = {}
    for chunk, jobs in ((333, 1), (1000, 2), (5000, 2)):
        for name in ("log.parquet", "logdir"):
            out = tmp_path / str(chunk) / name
            out.parent.mkdir(exist_ok=True)
            simulate(data, chunk_size=chunk, out=out, n_jobs=jobs, **kw)
            parts = sorted(out.glob("*.parquet")) if out.is_dir() else [out]
            files[chunk, name] = [(p.name, p.read_bytes()) for p in parts]
    for name in ("log.parquet", "logdir"):
        assert files[333, name] == files[1000, name] == files[5000, name]
    assert [n for n, _ in files[333, "logdir"]] == [f"part-{i:05d}.parquet" for i in range(4)]


def test_nothing_is_written_when_simulation_fails(data, tmp_path):
    class Failing:
        n_uniforms = 1

        def __init__(self):
            self.calls = 0

        def sample(self, labels, u):
            self.calls += 1
            if self.calls == 3:
                raise InputError("boom in chunk 3")
            return u[..., 0] < 0.5

    out = tmp_path / "log.parquet"
    with pytest.raises(InputError, match="boom"):
        simulate(
            data,
            policy=UniformRandom(),
            click_model=Failing(),
            n_sessions=1000,
            chunk_size=100,
            out=out,
        )
    assert list(tmp_path.iterdir()) == []


def test_progress_callback_counts_sessions(data):
    seen = []
    simulate(
        data,
        policy=UniformRandom(),
        click_model=_pbm(),
        n_sessions=950,
        chunk_size=300,
        progress=seen.append,
    )
    assert seen == [300, 300, 300, 50]


# -- CLI --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli():
    from clickrank.cli import simulate as _cmd  # noqa: F401  registers the command
    from clickrank.cli._root import cli as root

    return root


def test_cli_writes_a_valid_log_and_prints_a_summary(cli, tmp_path):
    out = tmp_path / "log.parquet"
    args = [
        "simulate",
        "--synthetic",
        "50",
        "--docs-per-query",
        "12",
        "--sessions",
        "2000",
        "--swap-fraction",
        "0.1",
        "--top-k",
        "5",
        "--out",
        str(out),
        "--chunk-size",
        "700",
    ]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert "2,000 sessions" in res.output and "position" in res.output
    log = read_log(out, lazy=False)
    assert log["session"].n_unique() == 2000 and log["position"].max() == 5
    again = CliRunner().invoke(cli, args)
    assert again.exit_code != 0 and "--force" in again.output
    forced = CliRunner().invoke(cli, [*args, "--force", "--jobs", "2"])
    assert forced.exit_code == 0
    assert_frame_equal(read_log(out, lazy=False), log)  # same seed, same log, on two threads


def test_cli_config_file(cli, tmp_path):
    cfg = tmp_path / "sim.toml"
    cfg.write_text('[simulate]\nsynthetic = 30\nsessions = 300\nclick-model = "dbn"\ntop-k = 4\n')
    out = tmp_path / "log.parquet"
    res = CliRunner().invoke(cli, ["simulate", "--config", str(cfg), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert read_log(out, lazy=False)["position"].max() == 4
    cfg.write_text("sessions = 10\nbogus = 1\n")
    res = CliRunner().invoke(cli, ["simulate", "--config", str(cfg), "--out", str(out)])
    assert res.exit_code == 1 and "unknown key 'bogus'" in res.output


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--eta", "-1"], "--eta must be >= 0"),
        (["--swap-fraction", "1.5"], "--swap-fraction must be a probability"),
        (["--eps", "2"], "--eps must be a probability"),
        (["--top-k", "40"], "top_k=40 is larger than the longest query"),
        (["--click-model", "nope"], "Invalid value for '--click-model'"),
        (["--click-model", "cascade", "--eta", "2"], "--eta applies to"),
        (["--sessions", "0"], "--sessions must be >= 1"),
        (["--jobs", "0"], "--jobs must be >= 1"),
        (["--threshold", "2"], "--threshold applies to --relevance binarized"),
        (["--relevance", "binarized", "--max-label", "2"], "--max-label applies to --relevance"),
        (["--production-min-queries", "0"], "--production-min-queries must be >= 1"),
        (["--production-fraction", "0"], "--production-fraction must be in (0, 1]"),
    ],
)
def test_cli_bad_arguments_fail_with_one_clear_line(cli, tmp_path, extra, message):
    out = tmp_path / "log.parquet"
    args = ["simulate", "--synthetic", "20", "--sessions", "100", "--out", str(out), *extra]
    res = CliRunner().invoke(cli, args)  # a repeated option: the last value wins
    assert res.exit_code != 0
    assert message in res.output
    assert "Traceback" not in res.output
    assert not out.exists()


def _letor(tmp_path, top: int, n_queries: int = 60):
    from clickrank.datasets import save_letor

    data = synthetic(n_queries, 12, seed=1)
    data = data.with_labels(np.minimum(data.y, top))
    return save_letor(data, tmp_path / f"labels0{top}.txt"), data


@pytest.mark.parametrize("top, threshold", [(2, 1), (4, 3)])
def test_cli_binarizes_by_the_label_range_and_says_so(cli, tmp_path, top, threshold):
    path, data = _letor(tmp_path, top)
    out = tmp_path / "log.parquet"
    res = CliRunner().invoke(
        cli,
        [
            "simulate",
            "--data",
            str(path),
            "--relevance",
            "binarized",
            "--sessions",
            "3000",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    line = (
        f"relevance: binarized at label >= {threshold} (labels 0..{top}; the default: 1 for "
        "labels up to 2, else the top label - 1)"
    )
    assert line in res.output.splitlines()
    log = read_log(out, lazy=False)
    # every shown document at or above the threshold is clicked when examined (eps+ = 1):
    # at position 1 (always examined) the click rate of such documents is exactly 1
    top1 = log.filter(pl.col("position") == 1)
    relevant = top1.filter(pl.col("label") >= threshold)
    assert relevant.height > 0 and relevant["click"].all()
    assert top1.filter(pl.col("label") < threshold)["click"].mean() < 0.2


def test_cli_prints_the_production_ranker_quality_and_stores_it_in_the_log(cli, tmp_path):
    from clickrank.clicklog import read_log_metadata
    from clickrank.datasets import load_letor
    from clickrank.policies.production import describe_quality, production_ranker

    path, _ = _letor(tmp_path, 2)
    out = tmp_path / "logdir"
    res = CliRunner().invoke(
        cli,
        [
            "simulate",
            "--data",
            str(path),
            "--sessions",
            "2000",
            "--production-fraction",
            "0.05",
            "--seed",
            "4",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    data = load_letor(path)
    quality = production_ranker(data, 0.05, seed=4).quality(data)  # 3 queries -> 20
    assert quality["trained_on"] == 20
    line = describe_quality(quality)
    assert line.startswith("production ranker: trained on 20 of 60 queries; NDCG@10 ")
    assert line in res.output.splitlines()
    meta = read_log_metadata(out)
    assert meta["logger_quality"] == {"production": quality}
    assert meta["relevance"].startswith(
        "relevance: graded, P(click | examined) from 0.1 at label 0 to 1 at label 2 (labels 0..2;"
    )
    res = CliRunner().invoke(
        cli,
        [
            "simulate",
            "--data",
            str(path),
            "--sessions",
            "200",
            "--production-min-queries",
            "5",
            "--out",
            str(tmp_path / "five.parquet"),
        ],
    )
    assert "production ranker: trained on 5 of 60 queries" in res.output


def test_cli_dbn_satisfaction_follows_the_label_range(cli, tmp_path):
    from clickrank.clicklog import read_log_metadata

    path, _ = _letor(tmp_path, 2)
    out = tmp_path / "log.parquet"
    res = CliRunner().invoke(
        cli,
        [
            "simulate",
            "--data",
            str(path),
            "--click-model",
            "dbn",
            "--sessions",
            "500",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "satisfaction (2^y - 1)/2^2 (ERR)" in res.output
    model = read_log_metadata(out)["click_model"]
    assert "satisfaction=ERRSatisfaction(max_label=2.0)" in model
    assert "attractiveness=Graded(eps=0.1, max_label=2.0)" in model


@pytest.mark.parametrize("model", ["pbm", "dbn", "mixture"])
def test_sample_clicks_are_the_clicks_simulate_draws(model):
    # online experiments and simulate() share this sampler: same session, same clicks
    from clickrank.clickmodels import web_search_population

    data = synthetic(30, 8, seed=1)
    cm = web_search_population() if model == "mixture" else make_click_model(model)
    log = simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=cm,
        n_sessions=500,
        top_k=6,
        seed=7,
    ).sort("session", "position")
    labels = log["label"].to_numpy().reshape(-1, 6)
    sessions = log["session"].to_numpy()[::6]
    clicks = sample_clicks(cm, labels, sessions, 7)
    np.testing.assert_array_equal(clicks, log["click"].to_numpy().reshape(-1, 6))
    # the counters are the session indices whatever their integer dtype (online uses int64)
    signed = sample_clicks(cm, labels, sessions.astype(np.int64), 7)
    np.testing.assert_array_equal(signed, clicks)
    # other streams are other draws; users share their type only for typed populations
    assert not np.array_equal(sample_clicks(cm, labels, sessions, 7, stream=222), clicks)
    users = sample_clicks(cm, labels, sessions, 7, users=sessions // 50)
    assert np.array_equal(users, clicks) == (model != "mixture")


def test_a_simulation_spec_gives_the_log_of_the_same_keywords(data, tmp_path):
    from clickrank.simulation import SimulationSpec

    kw = dict(
        policy=PlackettLuce(data.X[:, 0]),
        click_model="pbm",
        n_sessions=700,
        interventions=Swap(0.3),
        top_k=5,
        seed=11,
        first_session=3,
    )
    by_keywords = simulate(data, **kw, chunk_size=200)
    by_spec = simulate(data, SimulationSpec(**kw), chunk_size=300)
    assert_frame_equal(by_spec, by_keywords)
    with pytest.raises(InputError, match="seed in the SimulationSpec"):
        simulate(data, SimulationSpec(**kw), seed=4)
    with pytest.raises(InputError, match="needs policy"):
        simulate(data, click_model="pbm", n_sessions=10)
    with pytest.raises(InputError, match="SimulationSpec"):
        simulate(data, {"policy": kw["policy"]})
