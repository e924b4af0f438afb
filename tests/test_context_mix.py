"""Contexts mixed differently by query (``Context(query_concentration=...)``)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from clickrank import InputError
from clickrank.clickmodels import PBM, PowerLaw
from clickrank.datasets import synthetic
from clickrank.policies import DeterministicPolicy
from clickrank.simulation import Context, simulate


@pytest.fixture(scope="module")
def data():
    return synthetic(200, 8, seed=0)


def _log(data, kappa, chunk_size=7_000, n=40_000):
    ctx = Context("device", {"phone": 0.3, "desktop": 0.7}, {"phone": PBM(PowerLaw(2.0))},
                  query_concentration=kappa)  # fmt: skip
    return simulate(data, policy=DeterministicPolicy(data.X[:, 0]),
                    click_model=PBM(PowerLaw(0.5)), n_sessions=n, top_k=5, seed=1,
                    context=ctx, chunk_size=chunk_size)  # fmt: skip


def _phone_share(log):
    first = log.group_by("session").first()
    return first.group_by("query").agg((pl.col("device") == "phone").mean().alias("p"), pl.len())


def test_each_query_draws_its_own_share_around_the_given_one(data):
    ctx = Context("device", {"phone": 0.3, "desktop": 0.7}, query_concentration=1.0)
    drawn = ctx.query_shares(1, 5_000)
    np.testing.assert_allclose(drawn.sum(axis=1), 1.0)
    # Dirichlet(1.0 * (0.3, 0.7)): the phone share is Beta(0.3, 0.7)
    assert stats.kstest(drawn[:, 0], stats.beta(0.3, 0.7).cdf).pvalue > 1e-3
    assert Context("device", {"phone": 0.3, "desktop": 0.7}).query_shares(1, 10) is None
    # the log's sessions follow their query's share (binomial noise of ~200 sessions)
    per = _phone_share(_log(data, 1.0)).sort("query")
    expect = ctx.query_shares(1, data.n_queries)[:, 0]
    q = np.searchsorted(np.asarray(data.qid), per["query"].to_numpy())
    se = np.sqrt(expect[q] * (1 - expect[q]) / per["len"].to_numpy())
    assert np.mean(np.abs(per["p"].to_numpy() - expect[q]) <= 3 * se + 1e-12) > 0.97
    flat = _phone_share(_log(data, None))["p"].to_numpy()
    assert flat.std() < 0.06 < per["p"].std()


def test_the_mix_does_not_depend_on_the_chunk_size(data):
    a, b = _log(data, 2.0, chunk_size=40_000), _log(data, 2.0, chunk_size=3_001)
    assert a.equals(b)


@pytest.mark.parametrize("kappa", [0, -1.0, float("nan"), True, "1"])
def test_a_bad_concentration_is_one_line(kappa):
    with pytest.raises(InputError, match="query_concentration must be a number > 0"):
        Context("device", {"phone": 0.3, "desktop": 0.7}, query_concentration=kappa)
