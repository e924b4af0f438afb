"""Distributed training: XGBoost's SparkXGBRanker on clickrank's gains, features kept on Spark.

A local SparkSession (``local[2]``) trains :class:`clickrank.training.distributed.SparkRanker`
and the tests compare it with a local ``xgboost.XGBRanker`` fitted on the
same gains (:func:`clickrank.targets.make_target` on the whole local data).
Skipped, with the reason, where pyspark, xgboost or a Java runtime is missing.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from clickrank.clickmodels import make_click_model
from clickrank.datasets import RankingData, save_letor, save_parquet, synthetic
from clickrank.metrics import ndcg
from clickrank.policies import DeterministicPolicy
from clickrank.simulation import simulate
from clickrank.targets import make_target

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install 'clickrank[spark]')")
xgb = pytest.importorskip(
    "xgboost", reason="xgboost is not installed (pip install 'clickrank[spark]')"
)
if shutil.which("java") is None:
    pytest.skip("no Java runtime on the PATH (Spark needs Java 17)", allow_module_level=True)

from click.testing import CliRunner  # noqa: E402

from clickrank import engine  # noqa: E402
from clickrank._core._validation import DataFormatError, InputError  # noqa: E402
from clickrank.cli import cli  # noqa: E402
from clickrank.lambdamart import load_model  # noqa: E402
from clickrank.training.distributed import (  # noqa: E402
    SparkRanker,
    key_data,
    read_spark_data,
    spark_target,
    validation_queries,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.slow,  # a local Spark session and XGBoost fits on it
    # one pytest-xdist worker: one session start and one build of each module fixture
    pytest.mark.xdist_group("distributed"),
]

ETA = 1.0
TOP_K = 10
THETA = (1.0 / np.arange(1, TOP_K + 1)) ** ETA
TREES = 20


#: The session's JVM compiles with C1 only (as tests/test_spark.py's: a JVM that lives for
#: seconds spends much of its CPU in the C2 compiler). Test-only: the same plans run.
JVM = "-XX:TieredStopAtLevel=1"


@pytest.fixture(scope="module")
def spark():
    return engine.spark_session(
        "local[2]",
        spark_sql_shuffle_partitions="2",
        spark_default_parallelism="2",
        spark_ui_enabled="false",
        spark_driver_memory="1g",
        spark_driver_extraJavaOptions=JVM,
    )


def _logged(train: RankingData, root: Path, spark, seed: int):
    """Parquet features, a click log (PBM, a noisy logger showing the top 10) and both as Spark."""
    log = simulate(
        train,
        policy=DeterministicPolicy(train.X[:, 0]),
        click_model=make_click_model("pbm", eta=ETA),
        n_sessions=15000,
        top_k=TOP_K,
        seed=seed,
    )
    save_parquet(train, root / "train.parquet")
    log.write_parquet(root / "log.parquet")
    features = read_spark_data(root / "train.parquet", spark)
    return log, features, engine.to_spark(log, spark)


@pytest.fixture(scope="module")
def synth(spark, tmp_path_factory):
    data = synthetic(240, 15, seed=3)
    train, test = data.subset(np.arange(160)), data.subset(np.arange(160, 240))
    root = tmp_path_factory.mktemp("synth")
    log, features, slog = _logged(train, root, spark, seed=5)
    return dict(train=train, test=test, log=log, features=features, slog=slog, root=root)


@pytest.fixture(scope="module")
def mq(spark, tmp_path_factory, mq2008):
    """MQ2008 Fold1 from the shared data (conftest's ``mq2008``: skipped where absent)."""
    from clickrank.datasets import load_letor

    train, test = load_letor(mq2008 / "train.txt"), load_letor(mq2008 / "test.txt")
    root = tmp_path_factory.mktemp("mq2008")
    log, features, slog = _logged(train, root, spark, seed=7)
    return dict(train=train, test=test, log=log, features=features, slog=slog, root=root)


@pytest.fixture(scope="module")
def gains():
    """The distributed gains table of a case, by (case, target, candidates), built once. The
    log is the polars one: the Spark aggregation is test_training_table_holds_clickranks_gains'
    (and tests/test_spark.py's) subject; here it would only add seconds."""
    cache: dict = {}

    def get(case: dict, name: str, candidates: str):
        key = (id(case), name, candidates)
        if key not in cache:
            theta = THETA if name == "ips" else None
            cache[key] = spark_target(case["features"], case["log"], name, theta,
                                      candidates=candidates, clip=None)[0]  # fmt: skip
        return cache[key]

    return get


def _local_gains(case: dict, name: str, candidates: str):
    """make_target on the whole local data: the reference of every distributed target."""
    theta = THETA if name == "ips" else None
    return make_target(name, case["train"], case["log"], theta, candidates=candidates, clip=None)


def _local_fit(case: dict, ranker: SparkRanker, name: str, candidates: str, trees: int):
    """xgboost.XGBRanker with the ranker's parameters on the candidate rows of the local target."""
    train = case["train"]
    tgt = _local_gains(case, name, candidates)
    rows = np.ones(train.n_docs, bool) if tgt.candidates is None else tgt.candidates
    model = xgb.XGBRanker(**{**ranker.xgb_params(), "n_estimators": trees}, n_jobs=1)
    model.fit(train.X[rows], tgt.gains[rows], qid=train.query_index[rows])
    return model


def _ndcg10(scores, data: RankingData) -> float:
    return float(ndcg(scores, data.y, data.qptr, k=10).mean)


# -- the training table ------------------------------------------------------------------


@pytest.mark.parametrize(("name", "candidates"), [("naive", "all"), ("ips", "shown")])
def test_training_table_holds_clickranks_gains(synth, gains, name, candidates):
    """Every candidate (query, doc) once, with make_target's gain on the full local data
    (naive: the log aggregated on Spark; ips: the polars log, as the agreement tests)."""
    if name == "naive":
        table, _ = spark_target(synth["features"], synth["slog"], name, candidates=candidates,
                                clip=None)  # fmt: skip
    else:
        table = gains(synth, name, candidates)
    joined = engine._spark.to_polars(
        SparkRanker().training_frame(synth["features"], table).select("query", "doc", "gain")
    ).sort("query", "doc")
    train, tgt = synth["train"], _local_gains(synth, name, candidates)
    rows = np.ones(train.n_docs, bool) if tgt.candidates is None else tgt.candidates
    want = pl.DataFrame(
        {
            "query": np.repeat(train.qid, train.lengths)[rows],
            "doc": train.doc[rows],
            "gain": tgt.gains[rows],
        }
    ).sort("query", "doc")
    assert joined.height == int(rows.sum()) < train.n_docs + (candidates == "all")
    assert joined["query"].to_list() == want["query"].to_list()
    assert joined["doc"].to_list() == want["doc"].to_list()
    np.testing.assert_allclose(joined["gain"].to_numpy(), want["gain"].to_numpy(), rtol=1e-12)
    assert want["gain"].sum() > 0


def test_keys_only_make_a_featureless_ranking_data(synth):
    keys = key_data(synth["features"])
    train = synth["train"]
    assert keys.X.shape == (train.n_docs, 0)
    assert keys.qid.tolist() == train.qid.tolist()
    assert keys.doc.tolist() == train.doc.tolist()


def test_hybrid_candidates_are_refused(synth):
    with pytest.raises(InputError, match="weights documents"):
        spark_target(synth["features"], synth["log"], "naive", candidates="hybrid")


# -- agreement with a local XGBRanker ----------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("case_name", ["synth", "mq"])
def test_distributed_ndcg_agrees_with_local_xgboost(request, gains, case_name, workers):
    case = request.getfixturevalue(case_name)
    name, candidates = "ips", "shown"
    table = gains(case, name, candidates)
    ranker = SparkRanker(n_estimators=TREES, num_workers=workers, early_stopping_rounds=None)
    ranker.fit(case["features"], table, target_name=name)
    local = _local_fit(case, ranker, name, candidates, TREES)
    assert ranker.best_iteration_ == TREES
    dist, ref = ranker.predict(case["test"]), local.predict(case["test"].X)
    gap = abs(_ndcg10(dist, case["test"]) - _ndcg10(ref, case["test"]))
    print(f"{case_name} num_workers={workers}: NDCG@10 gap {gap:.5f}, "
          f"max score gap {np.abs(dist - ref).max():.2e}")  # fmt: skip
    assert gap <= 0.005
    if workers == 1:  # one worker sees the rows of one local fit: the same trees
        np.testing.assert_allclose(dist, ref, rtol=1e-5, atol=1e-6)


def test_early_stopping_on_held_out_clicks_matches_local_xgboost(synth, gains):
    """The chosen number of trees and the validation curve are a local eval_set's, and the
    curve is clickrank's NDCG@k with linear gains (ndcg_exp_gain=False reaches the metric)."""
    table = gains(synth, "naive", "all")
    ranker = SparkRanker(n_estimators=60, num_workers=1, early_stopping_rounds=5, refit=False,
                         valid_fraction=0.3)  # fmt: skip
    ranker.fit(synth["features"], table, target_name="naive")
    train, tgt = synth["train"], make_target("naive", synth["train"], synth["log"],
                                             candidates="all")  # fmt: skip
    held = validation_queries(train.qid.tolist(), 0.3, 0)
    assert 0 < held.sum() < held.size
    fit_rows, val_rows = ~held[train.query_index], held[train.query_index]
    local = xgb.XGBRanker(**ranker.xgb_params(), early_stopping_rounds=5, n_jobs=1)
    local.fit(train.X[fit_rows], tgt.gains[fit_rows], qid=train.query_index[fit_rows],
              eval_set=[(train.X[val_rows], tgt.gains[val_rows])],
              eval_qid=[train.query_index[val_rows]], verbose=False)  # fmt: skip
    curve = ranker.evals_result_["valid"]["ndcg@10"]
    np.testing.assert_allclose(curve, local.evals_result()["validation_0"]["ndcg@10"], atol=1e-6)
    assert ranker.best_iteration_ == local.best_iteration + 1 < 60
    valid = train.subset(np.flatnonzero(held))
    ours = ndcg(ranker.predict(valid), tgt.gains[val_rows], valid.qptr, k=10,
                gain="linear", empty="one").mean  # fmt: skip
    assert ours == pytest.approx(curve[ranker.best_iteration_ - 1], abs=1e-6)
    assert "trees: " in ranker.summary() and "held-out clicks" in ranker.summary()


# -- saving, loading, evaluating ---------------------------------------------------------


@pytest.fixture(scope="module")
def saved(synth):
    """``clickrank train --engine spark --distributed``: its output and model folder."""
    out = synth["root"] / "cli-model"
    args = ["train", "--engine", "spark", "--distributed", "--spark-master", "local[2]"]
    args += ["--data", str(synth["root"] / "train.parquet")]
    args += ["--log", str(synth["root"] / "log.parquet"), "--target", "naive"]
    args += ["--set", "candidates=all", "--set", "n_estimators=30"]
    args += ["--set", "early_stopping_rounds=5", "--out", str(out)]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    return res.output, out


def test_cli_train_distributed_end_to_end(saved, synth):
    output, path = saved
    model = load_model(path)
    assert f"trees chosen: {model.best_iteration_}" in output
    assert "SparkRanker" in output and "held-out clicks" in output
    assert model.target_name_ == "naive" and model.n_features_in_ == synth["train"].n_features
    assert model.n_train_docs_ == synth["train"].n_docs  # candidates all: every document


def test_save_load_predict_round_trip(saved, synth, tmp_path):
    ranker = load_model(saved[1])
    assert isinstance(ranker, SparkRanker)
    path = ranker.save(tmp_path / "again")
    back = load_model(path)
    assert back.best_iteration_ == ranker.best_iteration_ == back.booster_.num_boosted_rounds()
    assert (path / "model.json").read_bytes() == (saved[1] / "model.json").read_bytes()
    np.testing.assert_array_equal(back.predict(synth["test"]), ranker.predict(synth["test"]))
    scored = engine._spark.to_polars(
        back.predict(read_spark_data(synth["root"] / "train.parquet")).select("score")
    )
    np.testing.assert_allclose(scored["score"], back.predict(synth["train"]), rtol=1e-6)
    with pytest.raises(InputError, match="already holds a model"):
        ranker.save(path)


def test_cli_evaluate_reads_the_saved_folder(saved, synth):
    path = saved[1]
    save_letor(synth["test"], synth["root"] / "test.txt")
    res = CliRunner().invoke(
        cli,
        [
            "evaluate",
            "--model",
            str(path),
            "--data",
            str(synth["root"] / "test.txt"),
            "--bootstrap",
            "50",
            "--metric",
            "ndcg@10",
        ],  # fmt: skip
    )
    assert res.exit_code == 0, res.output
    want = _ndcg10(load_model(path).predict(synth["test"]), synth["test"])
    assert f"{want:.4f}" in res.output


def test_tampered_model_json_is_refused(saved, tmp_path):
    path = saved[1]
    copy = tmp_path / "model"
    shutil.copytree(path, copy)
    raw = bytearray((copy / "model.json").read_bytes())
    i = raw.index(b"split_conditions") + 25  # a digit of a split threshold
    raw[i] = ord("7") if raw[i] != ord("7") else ord("3")
    (copy / "model.json").write_bytes(bytes(raw))
    with pytest.raises(DataFormatError, match="model.json.*SHA-256"):
        load_model(copy)
    meta = json.loads((path / "meta.json").read_text())
    (copy / "model.json").write_bytes((path / "model.json").read_bytes())
    (copy / "meta.json").write_text(json.dumps({**meta, "extra": 1}))
    with pytest.raises(DataFormatError, match="unknown key"):
        load_model(copy)


# -- doubly robust gains ----------------------------------------------------------------


def test_dr_direct_model_on_the_cluster(synth):
    """DR on the cluster: the direct-method model is clickrank's (a cross-fitted Poisson
    regression of C/E with weight E), grown by XGBoost on the executors; the gains are
    clickrank's DR formula with that relevance, row for row."""
    from clickrank.targets import click_stats, dr, relevance_model
    from clickrank.training.distributed import spark_relevance

    train, log = synth["train"], synth["log"]
    keys = key_data(synth["features"])
    assert np.array_equal(keys.qid, train.qid) and np.array_equal(keys.doc, train.doc)
    r = spark_relevance(synth["features"], folds=2, seed=1)(keys, click_stats(keys, log, THETA))
    local = relevance_model(train, click_stats(train, log, THETA), folds=2, seed=1)
    assert np.corrcoef(r, local)[0, 1] > 0.95  # the same model, grown by another library
    assert abs(r.mean() - local.mean()) < 0.01
    table, target = spark_target(synth["features"], log, "dr", THETA, clip=None, seed=1,
                                 folds=2)  # fmt: skip
    want = dr(train, log, THETA, relevance=r, clip=None)
    np.testing.assert_allclose(target.gains, want.gains, rtol=1e-6)
    assert table.height == train.n_docs  # DR covers every document, shown or not


# -- the command line --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--engine", "polars", "--target", "naive"], "add --engine spark"),
        (
            ["--engine", "spark", "--target", "auto"],
            "supports --target naive or ips or dr, not auto",
        ),
        (["--engine", "spark", "--target", "ips-pairs"], "not ips-pairs"),
        (["--engine", "spark", "--target", "naive", "--set", "num_workers=0"],
         "num_workers must be an integer >= 1"),
        (["--engine", "spark", "--target", "naive", "--set", "num_leaves=8"],
         "unknown key 'num_leaves' (--set) for SparkRanker"),
    ],
)  # fmt: skip
def test_cli_distributed_option_errors_are_one_line(synth, tmp_path, extra, message):
    args = ["train", "--distributed", "--data", str(synth["root"] / "train.parquet")]
    args += ["--log", str(synth["root"] / "log.parquet"), "--out", str(tmp_path / "m"), *extra]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == (1 if "--set" in extra else 2)
    errors = [line for line in res.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and message in errors[0], res.output
    assert not (tmp_path / "m").exists()


def test_bad_feature_data_is_one_line_naming_path_and_column(spark, synth, tmp_path):
    frame = synth["train"].to_frame()
    frame.drop("f2").write_parquet(tmp_path / "gap.parquet")
    with pytest.raises(DataFormatError, match=r"gap\.parquet.*f2") as err:
        read_spark_data(tmp_path / "gap.parquet", spark)
    assert "\n" not in str(err.value)
    frame.drop("doc").write_parquet(tmp_path / "nodoc.parquet")
    with pytest.raises(DataFormatError, match=r"nodoc\.parquet.*doc"):
        read_spark_data(tmp_path / "nodoc.parquet", spark)
    pl.concat([frame, frame.head(1)]).write_parquet(tmp_path / "dup.parquet")
    with pytest.raises(DataFormatError, match="appears more than once"):
        key_data(read_spark_data(tmp_path / "dup.parquet", spark), "dup.parquet")
    with pytest.raises(DataFormatError, match="no such file"):
        read_spark_data(tmp_path / "missing.parquet", spark)
