"""The Spark engine gives the polars results: every estimator, every target, the simulation.

Every test that takes the ``spark`` fixture runs twice: on a local
SparkSession (``local[2]``) and on a Spark standalone cluster started here
(:class:`clickrank.engine.cluster.StandaloneCluster`: a master and two
workers as separate processes, the executors separate JVMs with their own
Python workers). Both give the polars numbers. The cluster also runs
``spark-submit`` jobs with clickrank shipped by ``--py-files``, and loses a
worker in the middle of one. Skipped, with the reason, where pyspark or a
Java runtime is missing (``pip install 'clickrank[spark]'``; Java 17).
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
from clickrank.engine.cluster import StandaloneCluster, code_zip  # noqa: E402
from clickrank.engine.simulate import simulate_spark  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.slow,  # a Spark session: 10-20 s to start, seconds per test
    # two pytest-xdist workers share this module, each with one SparkSession at a time: the
    # local session's tests in group "spark"; the standalone cluster's (marked STANDALONE
    # too: group "spark_standalone") in the other, so that the two halves run side by side
    pytest.mark.xdist_group("spark"),
]
#: The tests that run on the module's standalone cluster: one pytest-xdist worker for them.
STANDALONE = pytest.mark.xdist_group("standalone")
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

#: The JVMs these tests start (drivers, executors, the cluster's master and workers) compile
#: with C1 only: a JVM that lives for seconds spends much of its CPU in the C2 compiler (a
#: cluster's start takes half the CPU with this flag, a local session's module a quarter less
#: time). Test-only: the same Spark runs the same plans; only how its Java code is compiled.
JVM = "-XX:TieredStopAtLevel=1"
#: Passed to every session these tests start (the driver's flag reaches its JVM only at the
#: first session of a process, which launches it; the executors' at every session).
JVM_CONF = {"spark_driver_extraJavaOptions": JVM, "spark_executor_extraJavaOptions": JVM}


class Cluster(StandaloneCluster):
    """:class:`StandaloneCluster` with :data:`JVM` for every JVM of its own: the master and
    the workers (``SPARK_DAEMON_JAVA_OPTS``), the executors of its sessions and of
    spark-submit, and spark-submit's driver. Nothing else differs."""

    def _env(self) -> dict[str, str]:
        return {**super()._env(), "SPARK_DAEMON_JAVA_OPTS": JVM}

    def session(self, **conf: str):
        return super().session(**{**JVM_CONF, **conf})

    def submit(self, script, *args: str, conf: dict[str, str] | None = None, **kw):
        jvm = {key.replace("_", "."): value for key, value in JVM_CONF.items()}
        return super().submit(script, *args, conf={**jvm, **(conf or {})}, **kw)


def stop_active_session() -> None:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone cluster: a master and two workers of two task slots each (this
    process's session takes two slots, one per worker; spark-submit jobs the others)."""
    with Cluster(workers=2, cores=2, folder=tmp_path_factory.mktemp("cluster")) as c:
        yield c
        stop_active_session()


@pytest.fixture(scope="module", params=["local", pytest.param("standalone", marks=STANDALONE)])
def spark(request):
    stop_active_session()
    conf = {"spark_sql_shuffle_partitions": "2", "spark_default_parallelism": "2",
            "spark_ui_enabled": "false"}  # fmt: skip
    if request.param == "local":
        s = engine.spark_session("local[2]", spark_driver_memory="1g", **JVM_CONF, **conf)
    else:
        c = request.getfixturevalue("cluster")
        s = c.session(spark_cores_max="2", spark_executor_cores="1", **conf)
    yield s
    s.stop()


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
        n_sessions=4000,
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


# -- targets -------------------------------------------------------------------------------

THETA = 1.0 / np.arange(1, 7)


def same_target(a, b):
    """Two targets with equal gains, pairs, weights, session lists and candidates."""
    assert a.name == b.name and a.kind == b.kind
    for field in ("gains", "pairs", "pair_weights", "candidates", "doc_weights"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), field
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=1e-12, err_msg=field)
    if a.sessions is not None:
        for field in ("rows", "sptr", "positions", "clicks", "counts"):
            np.testing.assert_array_equal(
                getattr(a.sessions, field), getattr(b.sessions, field), err_msg=field
            )
    assert a.metadata == b.metadata


def test_click_stats_equal(data, log, sdf):
    from clickrank.targets import click_stats

    for theta, clip in ((None, None), (THETA, None), (THETA, "auto")):
        a, b = click_stats(data, sdf, theta, clip=clip), click_stats(data, log, theta, clip=clip)
        for field in ("clicks", "impressions", "exposure", "ips", "sessions"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)
        assert a.n_sessions == b.n_sessions and a.clip == b.clip


@pytest.mark.parametrize(
    "name",
    ["naive", "ips", "dr", "ips-pairs", "prs-pairs", "skip-above", "unbiased-lambdamart"],
)
def test_targets_equal(data, log, sdf, name):
    from clickrank.targets import make_target

    theta = THETA if name in ("ips", "dr", "ips-pairs", "prs-pairs") else None
    same_target(make_target(name, data, sdf, theta), make_target(name, data, log, theta))


@pytest.mark.parametrize(
    "strategy", ["skip-above", "last-click-skip-above", "skip-previous+skip-next"]
)
def test_click_preferences_equal(data, log, sdf, strategy):
    from clickrank.targets import click_preferences

    a = click_preferences(data, sdf, strategy=strategy, propensities=THETA, ips_weighted=True)
    b = click_preferences(data, log, strategy=strategy, propensities=THETA, ips_weighted=True)
    same_target(a, b)
    assert a.metadata["preferences"] > 0


# -- simulation on executors ---------------------------------------------------------------


@pytest.mark.parametrize("partitions", [1, 7])
def test_simulate_spark_rows_equal(spark, data, tmp_path, partitions):
    """The parquet folder Spark writes holds simulate()'s rows, whatever the partitions."""
    from clickrank.clicklog import read_log

    kw = {
        "policy": DeterministicPolicy(data.X[:, 0]),
        "click_model": make_click_model("pbm", eta=1.0),
        "top_k": 5,
        "interventions": [Swap(0.3), Randomize(0.2)],
        "seed": 11,
    }
    out = tmp_path / "log"
    df = simulate_spark(data, n_sessions=1000, out=out, spark=spark, partitions=partitions, **kw)
    assert df.count() == 5000
    assert len(list(out.glob("*.parquet"))) == partitions
    got = read_log(out, lazy=False).sort("session", "position")  # validated, canonical dtypes
    want = simulate(data, n_sessions=1000, **kw)
    cats = [c for c, t in want.schema.items() if t == pl.Categorical]
    cast = [pl.col(c).cast(pl.String) for c in cats]
    assert got.columns == want.columns
    assert got.with_columns(cast).equals(want.with_columns(cast))


def test_simulate_spark_refuses_existing(spark, data, tmp_path):
    from clickrank._core._validation import InputError

    kw = {"policy": DeterministicPolicy(data.X[:, 0]), "click_model": "pbm", "top_k": 3}
    with pytest.raises(InputError, match="exists"):
        simulate_spark(data, n_sessions=10, out=tmp_path, spark=spark, **kw)


# -- the CLI -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def logged(tmp_path_factory, data):
    """A parquet folder with swap sessions, LETOR data and propensities, on disk."""
    import json

    from clickrank.datasets import save_letor

    root = tmp_path_factory.mktemp("cli")
    simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=4000,
        top_k=6,
        interventions=[Swap(0.4)],
        seed=8,
        out=root / "log",
    )
    save_letor(data, root / "train.txt")
    (root / "theta.json").write_text(json.dumps({"theta": THETA.tolist()}))
    return root


def test_cli_propensity_engine_spark(spark, logged, tmp_path):
    import json

    from click.testing import CliRunner

    from clickrank.cli import cli

    out = {}
    for eng in ("polars", "spark"):
        args = ["propensity", str(logged / "log"), "--out", str(tmp_path / f"{eng}.json")]
        res = CliRunner().invoke(cli, [*args, "--engine", eng, "--spark-master", "local[2]"])
        assert res.exit_code == 0, res.output
        out[eng] = json.loads((tmp_path / f"{eng}.json").read_text())
    for key in ("theta", "lower", "upper", "n_sessions"):
        np.testing.assert_allclose(out["spark"][key], out["polars"][key], rtol=1e-12)


@pytest.mark.parametrize("target", ["ips", "skip-above"])
def test_cli_train_engine_spark(spark, logged, target, tmp_path):
    """The same target gives the same trees: model.txt is identical for both engines."""
    from click.testing import CliRunner

    from clickrank.cli import cli

    models = {}
    for eng in ("polars", "spark"):
        out = tmp_path / f"model-{target}-{eng}"
        args = ["train", "--data", str(logged / "train.txt"), "--log", str(logged / "log")]
        args += ["--target", target, "--propensities", str(logged / "theta.json")]
        args += ["--no-select", "--set", "n_estimators=5", "--set", "num_leaves=4"]
        args += ["--out", str(out)]
        res = CliRunner().invoke(cli, [*args, "--engine", eng])
        assert res.exit_code == 0, res.output
        models[eng] = (out / "model.txt").read_text()
    assert models["spark"] == models["polars"]


def test_cli_spark_table_missing_is_one_line(spark, logged):
    from click.testing import CliRunner

    from clickrank.cli import cli

    res = CliRunner().invoke(
        cli,
        ["propensity", "table:nodb.nolog", "--engine", "spark", "--out", str(logged / "x.json")],
    )
    assert res.exit_code != 0
    assert "nolog" in res.output and "Traceback" not in res.output


# -- the boundary --------------------------------------------------------------------------


def test_base_package_never_imports_pyspark():
    """``import clickrank`` and a polars estimate work where pyspark cannot be imported."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "import clickrank, clickrank.engine, clickrank.cli\n"
        "from clickrank.propensity import swap\n"
        "from clickrank.datasets import synthetic\n"
        "data = synthetic(20, 8, seed=0)\n"
        "log = clickrank.simulate(data, policy=data.X[:, 0], click_model='pbm', n_sessions=500,\n"
        "                         top_k=4, interventions=clickrank.Swap(0.5), seed=1)\n"
        "print(swap(log).K)\n"
        "try:\n"
        "    clickrank.engine.spark_session()\n"
        "except clickrank.InputError as err:\n"
        "    print(err)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == "4"
    assert "pip install 'clickrank[spark]'" in res.stdout


def test_missing_java_is_a_clear_error(monkeypatch):
    from clickrank._core._validation import InputError
    from clickrank.engine import _detect

    monkeypatch.setattr(_detect.shutil, "which", lambda name: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(InputError, match="Java runtime"):
        _detect.require_spark()


def test_fair_pairs_equal(spark, data):
    from clickrank.simulation import FairPairs
    from clickrank.targets import fair_pairs

    log = simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 1]),
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=2000,
        top_k=6,
        interventions=FairPairs(0.6),
        seed=9,
    )
    a, b = fair_pairs(data, engine.to_spark(log, spark)), fair_pairs(data, log)
    same_target(a, b)
    assert a.metadata["fairpairs_sessions"] > 1000 and a.metadata["preferences"] > 0


def test_click_ranker_on_a_spark_log_equals_polars(data, log, sdf):
    """ClickRanker takes a Spark DataFrame (propensities estimated from its swaps on Spark):
    the same members, scores and choice as on the polars log."""
    from clickrank.clickranker import ClickRanker

    kw = {"family": ("naive", "ips-shown"), "folds": 3, "repeats": 1, "n_estimators": 20,
          "grid": ({"num_leaves": 4, "max_depth": 2},), "seed": 0}  # fmt: skip
    a = ClickRanker(**kw).fit(data, log)
    b = ClickRanker(**kw).fit(data, sdf)
    assert a.choice_ == b.choice_
    np.testing.assert_allclose(a.table_["score"].to_numpy(), b.table_["score"].to_numpy(),
                               rtol=1e-9)  # fmt: skip
    np.testing.assert_allclose(a.predict(data), b.predict(data), rtol=1e-9)


def test_click_ranker_members_as_spark_tasks_equal_a_local_fit(data, log, sdf):
    """On a Spark log the members are fitted as Spark tasks (on the standalone cluster, in its
    executors): the same choice, cost, out-of-fold scores and trees as fitted here, to the bit;
    engine='spark' refuses a polars log in one line."""
    from clickrank._core._validation import InputError
    from clickrank.clickranker import ClickRanker

    kw = {"family": ("naive", "ips-shown", "unbiased-lambdamart"), "folds": 3, "repeats": 1,
          "n_estimators": 20, "grid": ({"num_leaves": 4, "max_depth": 2},
                                       {"num_leaves": 8, "max_depth": 3}), "seed": 0}  # fmt: skip
    here = ClickRanker(engine="local", **kw).fit(data, sdf)
    tasks = ClickRanker(**kw).fit(data, sdf)
    assert (here.members_engine_, tasks.members_engine_) == ("local", "spark")
    assert here.choice_ == tasks.choice_ and here.cost_ == tasks.cost_
    np.testing.assert_array_equal(here.predict(data), tasks.predict(data))
    for m in here.members_:
        np.testing.assert_array_equal(here.members_[m].oof_, tasks.members_[m].oof_)
    # a refit instead of the fold models' average (the default): the driver's plan goes
    # to the tasks, whose refitted models equal the local ones
    here_refit = ClickRanker(engine="local", refit=True, **kw).fit(data, sdf)
    tasks_refit = ClickRanker(refit=True, **kw).fit(data, sdf)
    assert not any(cv.refit for cv in tasks.members_.values())
    assert all(cv.refit for cv in tasks_refit.members_.values())
    assert tasks_refit.cost_["fits"] == tasks.cost_["fits"] + len(kw["family"])
    np.testing.assert_array_equal(here_refit.predict(data), tasks_refit.predict(data))
    with pytest.raises(InputError, match="Spark DataFrame"):
        ClickRanker(engine="spark", **kw).fit(data, log)


def test_the_member_race_as_spark_tasks_equals_a_local_one(data, sdf, monkeypatch):
    """The members race on their first fold: as Spark tasks, two jobs (the first folds,
    then the rest of the selections sent back to the executors), the same members raced
    out, cost and trees as here (a guard of 0 at a confidence of 0.5: every member below
    the first fold's best is raced out)."""
    from clickrank.clickranker import ClickRanker

    kw = {"family": ("naive", "ips-shown", "ips-all", "unbiased-lambdamart"), "folds": 3,
          "repeats": 1, "n_estimators": 20, "unseen_guard": 0.0, "confidence": 0.5, "refit": False,
          "grid": ({"num_leaves": 4, "max_depth": 2}, {"num_leaves": 8, "max_depth": 3}),
          "seed": 0}  # fmt: skip
    here = ClickRanker(engine="local", **kw).fit(data, sdf)
    tasks = ClickRanker(**kw).fit(data, sdf)
    assert tasks.members_engine_ == "spark" and tasks.raced_
    assert here.raced_ == tasks.raced_ and here.cost_ == tasks.cost_
    assert here.choice_ == tasks.choice_ and here.averaged_ == tasks.averaged_
    np.testing.assert_array_equal(here.predict(data), tasks.predict(data))


# -- the standalone cluster ----------------------------------------------------------------


@pytest.mark.parametrize("spark", [pytest.param("standalone", marks=STANDALONE)], indirect=True)
def test_standalone_tasks_run_in_executors_of_both_workers(cluster, spark, data):
    """On the cluster, clickrank's numpy code runs in Python workers of executor JVMs started
    by each worker (not in this process), and the simulation gives the polars rows."""
    import os

    assert spark.sparkContext.master == cluster.url

    where = (
        spark.sparkContext.parallelize(range(8), 8)
        .map(lambda _: (os.getpid(), __import__("clickrank._core._random").__file__))
        .collect()
    )
    assert os.getpid() not in {pid for pid, _ in where}
    by_worker = {}
    for p in cluster.processes():
        by_worker.setdefault(p["role"], set()).add(p["kind"])
    assert {"executor", "python"} <= by_worker["worker-0"], by_worker
    assert {"executor", "python"} <= by_worker["worker-1"], by_worker


DRIVER = "from clickrank.cli import main\nmain()\n"  # docs/scale.md's spark-submit driver


@STANDALONE
def test_spark_submit_with_py_files(cluster, logged, tmp_path):
    """docs/scale.md's spark-submit line, with clickrank shipped as a zip by --py-files (the
    executors compute the bootstrap buckets with it): the estimate equals the polars one."""
    import json

    from click.testing import CliRunner

    from clickrank.cli import cli

    driver = tmp_path / "clickrank_driver.py"
    driver.write_text(DRIVER)
    code = code_zip(tmp_path / "clickrank.zip")
    args = ["propensity", str(logged / "log"), "--bootstrap", "50", "--seed", "3"]
    cluster.submit(
        driver, *args, "--engine", "spark", "--out", str(tmp_path / "spark.json"),
        py_files=[code], conf={"spark.cores.max": "2"},
    )  # fmt: skip
    res = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "polars.json")])
    assert res.exit_code == 0, res.output
    a, b = (json.loads((tmp_path / f"{e}.json").read_text()) for e in ("spark", "polars"))
    for key in ("theta", "lower", "upper", "n_sessions"):
        np.testing.assert_allclose(a[key], b[key], rtol=1e-12)


GATED_JOB = """
import json, os, sys, time
from pyspark import TaskContext
from clickrank.engine import read_spark_log, spark_session
from clickrank.propensity import bootstrap

log_path, marks, out = sys.argv[1:4]
spark = spark_session(None)

def gate(batches):  # each task says it started, then waits for the test's go
    import clickrank

    ctx = TaskContext.get()
    with open(os.path.join(marks, f"{ctx.partitionId()}-{ctx.attemptNumber()}"), "w") as f:
        f.write(clickrank.__file__)  # where the executor found clickrank
    deadline = time.time() + 120
    while not os.path.exists(os.path.join(marks, "go")) and time.time() < deadline:
        time.sleep(0.05)
    yield from batches

log = read_spark_log(log_path, spark).repartition(8)
log = log.mapInArrow(gate, log.schema)
theta = bootstrap("swap", log, n=40, buckets=16, seed=4)
with open(out, "w") as f:
    json.dump({"theta": theta.theta.tolist(), "replicates": theta.replicates.tolist()}, f)
"""


def test_worker_killed_mid_job_same_result(logged, tmp_path):
    """A worker (with its executor and Python workers) is killed while the job's tasks run:
    Spark retries them on the other worker, and the estimate is the polars one. The
    executors import clickrank from the zip that spark-submit shipped."""
    import json
    import time

    from clickrank.clicklog import read_log

    script = tmp_path / "job.py"
    script.write_text(GATED_JOB)
    marks = tmp_path / "marks"
    marks.mkdir()
    code = code_zip(tmp_path / "clickrank.zip")
    with Cluster(workers=2, cores=1, folder=tmp_path / "cluster") as c:
        job = c.submit(script, str(logged / "log"), str(marks), str(tmp_path / "out.json"),
                       py_files=[code], wait=False)  # fmt: skip
        deadline = time.monotonic() + 120
        while len(list(marks.iterdir())) < 2 and job.poll() is None:  # a task on each worker
            assert time.monotonic() < deadline, "the job's tasks never started"
            time.sleep(0.1)
        # the driver hears of the loss at once (the executor's connection drops: "worker
        # lost: ... disassociated"), not after a heartbeat timeout: the retries start within
        # seconds (measured: the job ends 3-5 s after the kill), no timeout to shorten here
        c.kill_worker(1)
        (marks / "go").touch()
        stdout, stderr = job.communicate(timeout=240)
    assert job.returncode == 0, stderr[-2000:]
    tasks = [m for m in marks.iterdir() if m.name != "go"]
    assert any(not m.name.endswith("-0") for m in tasks), "no task retried: the kill came late"
    assert all("clickrank.zip" in m.read_text() for m in tasks)
    got = json.loads((tmp_path / "out.json").read_text())
    want = bootstrap("swap", read_log(logged / "log"), n=40, buckets=16, seed=4)
    np.testing.assert_allclose(got["theta"], want.theta, rtol=1e-12)
    np.testing.assert_allclose(got["replicates"], want.replicates, rtol=1e-9, equal_nan=True)


def test_dead_master_is_one_line(logged, tmp_path):
    """``clickrank propensity --engine spark`` against a master nobody runs: one line, at once
    (Spark itself would retry for a minute, then print a Java stack trace)."""
    import subprocess
    import sys

    from clickrank.engine.cluster import _free_port

    url = f"spark://127.0.0.1:{_free_port('127.0.0.1')}"  # nothing listens there
    args = ["propensity", str(logged / "log"), "--engine", "spark", "--spark-master", url]
    res = subprocess.run(
        [sys.executable, "-m", "clickrank.cli", *args, "--out", str(tmp_path / "t.json")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode != 0
    lines = (res.stdout + res.stderr).strip().splitlines()
    assert lines == [f"Error: cannot reach the Spark master {url}: Connection refused"], lines


def test_cluster_that_cannot_start_is_one_line(tmp_path):
    """A worker that exits at start (an invalid --memory) stops the cluster and says why in
    one line, with the end of that worker's log; no process is left behind."""
    from clickrank._core._validation import InputError

    cluster = Cluster(workers=1, memory="lots", folder=tmp_path / "c", timeout=60)
    with pytest.raises(InputError, match="did not start") as err:
        cluster.start()
    assert "\n" not in str(err.value) and "worker-0.log: Spark printed its usage" in str(err.value)
    assert cluster.master is None and cluster.workers == []


def test_per_context_curves_on_spark(spark, log):
    """Swap's per-context curves from Spark's counts equal polars'; the methods that fit
    per context on a polars log say so in one line."""
    from clickrank import InputError
    from clickrank.propensity import estimate_propensities

    devices = log.with_columns(
        device=pl.when(pl.col("session") % 3 == 0)
        .then(pl.lit("phone"))
        .otherwise(pl.lit("desktop"))
    )
    on_spark = engine.to_spark(devices, spark)
    a = estimate_propensities(on_spark, "swap", context="device")
    b = estimate_propensities(devices, "swap", context="device")
    same(a, b)
    for x, y in zip(a.contexts.curves, b.contexts.curves, strict=True):
        same(x, y)
    with pytest.raises(InputError, match="'em' are estimated on a polars log"):
        estimate_propensities(on_spark, "em", context="device", n_boot=0)
