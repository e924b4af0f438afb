"""The Spark engine gives the polars results: every estimator, every target, the simulation.

A local SparkSession (``local[2]``) runs the same aggregations as polars on
the same simulated logs. Skipped, with the reason, where pyspark or a Java
runtime is missing (``pip install 'clickrank[spark]'``; Java 17).
"""

from __future__ import annotations

import shutil

import numpy as np
import polars as pl
import pytest

from clickrank.clickmodels import make_click_model
from clickrank.datasets import synthetic
from clickrank.policies import DeterministicPolicy, MixturePolicy
from clickrank.simulation import Randomize, RandPair, Swap, simulate

pyspark = pytest.importorskip(
    "pyspark", reason="pyspark is not installed (pip install 'clickrank[spark]')"
)
if shutil.which("java") is None:
    pytest.skip("no Java runtime on the PATH (Spark needs Java 17)", allow_module_level=True)

from clickrank import engine  # noqa: E402
from clickrank.propensity import (  # noqa: E402
    bootstrap,
    em,
    harvest_allpairs,
    harvest_pivot,
    randomized,
    randpair,
    swap,
)
from clickrank.propensity._harvest import cell_statistics  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    s = engine.spark_session(
        "local[2]",
        spark_sql_shuffle_partitions="4",
        spark_default_parallelism="2",
        spark_ui_enabled="false",
        spark_driver_memory="1g",
    )
    yield s


@pytest.fixture(scope="module")
def data():
    return synthetic(40, 12, seed=3)


@pytest.fixture(scope="module")
def log(data):
    mix = MixturePolicy([DeterministicPolicy(data.X[:, j], name=f"r{j}") for j in range(3)])
    return simulate(
        data,
        policy=mix,
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=6000,
        top_k=6,
        interventions=[Swap(0.25), RandPair(0.2), Randomize(0.25)],
        seed=5,
    )


@pytest.fixture(scope="module")
def sdf(spark, log):
    return engine.to_spark(log, spark).cache()


def same(a, b):
    """Two Propensities with equal estimates and intervals (to rounding)."""
    np.testing.assert_allclose(a.theta, b.theta, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(a.se, b.se, rtol=1e-9, equal_nan=True)
    np.testing.assert_allclose(a.n, b.n, rtol=1e-12)
    assert a.n_sessions == b.n_sessions
    assert a.method == b.method


def test_detection_without_import(log, sdf):
    assert engine.is_spark(sdf) and not engine.is_spark(log)
    assert engine.engine_of(sdf) == "spark"
    schema = engine.log_schema(sdf)
    assert schema["position"].is_integer() and schema["click"] == pl.Boolean


@pytest.mark.parametrize(
    "estimate",
    [
        swap,
        lambda lg: swap(lg, route="bottom"),
        randpair,
        randomized,
        harvest_allpairs,
        harvest_pivot,
        lambda lg: em(lg, n_boot=0),
    ],
    ids=["swap", "swap-bottom", "randpair", "randomized", "allpairs", "pivot", "em"],
)
def test_estimators_equal(log, sdf, estimate):
    same(estimate(sdf), estimate(log))


def test_cell_statistics_with_buckets_equal(log, sdf):
    a = cell_statistics(sdf, buckets=7, seed=2)
    b = cell_statistics(log.lazy(), buckets=7, seed=2)
    for k in ("g", "position", "n", "c"):
        np.testing.assert_array_equal(a[k], b[k])
    for k in ("n", "c"):
        np.testing.assert_array_equal(a["_by_bucket"][k].toarray(), b["_by_bucket"][k].toarray())
    assert a["n_sessions"] == b["n_sessions"]


@pytest.mark.parametrize("method", ["swap", "randomized", "em"])
def test_bootstrap_equal(log, sdf, method):
    """The session buckets are computed by the same numpy code on the executors."""
    kw = {"n": 20, "buckets": 16, "seed": 4}
    a, b = bootstrap(method, sdf, **kw), bootstrap(method, log, **kw)
    same(a, b)
    np.testing.assert_allclose(a.replicates, b.replicates, rtol=1e-9, equal_nan=True)
