"""Tests of clickrank.targets: oracle, naive, IPS and skip-above from click logs."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from clickrank import InputError, LogSchemaError, RankingData
from clickrank.datasets import synthetic
from clickrank.targets import Target, as_theta, ips, naive, oracle, skip_above


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
    t = ips(data, log, THETA)
    np.testing.assert_allclose(t.gains, want)
    clipped = ips(data, log, THETA, clip=0.4)
    np.testing.assert_allclose(
        clipped.gains,
        np.bincount(rows, weights=c / np.maximum(THETA, 0.4)[pos - 1], minlength=data.n_docs),
    )


def test_ips_self_normalized_gains_sum_to_one_per_query(data, log):
    t = ips(data, log, THETA, self_normalize=True)
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
        ips(data, log, theta)


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
    assert "ips" in text and "documents shown" in text


def test_targets_do_not_depend_on_log_row_order(data, log):
    shuffled = log.sample(fraction=1.0, shuffle=True, seed=9)
    assert ips(data, shuffled, THETA).gains.tobytes() == ips(data, log, THETA).gains.tobytes()
    a = skip_above(data, shuffled, ips_weighted=True, propensities=THETA)
    b = skip_above(data, log, ips_weighted=True, propensities=THETA)
    assert a.pairs.tobytes() == b.pairs.tobytes()
    assert a.pair_weights.tobytes() == b.pair_weights.tobytes()
