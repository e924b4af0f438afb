"""benchmarks/debiasing_real.py: ``--suite`` runs the suite's cells (not the one-fold protocol)
and writes one JSON entry per cell and seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from argparse import Namespace
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from clickrank import synthetic

ROOT = Path(__file__).resolve().parents[1]


def test_suite_runs_the_cells_it_is_asked_for(mq2008, tmp_path):
    out = tmp_path / "suite.json"
    env = {**os.environ, "CLICKRANK_SHARED_DATA": str(mq2008.parents[1])}
    cell = "synthetic-150 n=2000 production"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "debiasing_real.py"), "--suite",
           "--seeds", "1", "--suite-sessions", "2000", "--only", cell, "--methods",
           "production", "--cache", str(tmp_path / "folds"), "--json", str(out)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    dump = json.loads(out.read_text())
    assert list(dump) == [cell] and len(dump[cell]) == 1
    assert 0 < dump[cell][0]["production"] <= 1
    # the suite's five folds were rebuilt from S1-S5 into the cache (never into shared data)
    assert sorted(p.name for p in (tmp_path / "folds").iterdir()) == [
        f"Fold{k}" for k in range(1, 6)
    ]


def _refusal(bench, argv, monkeypatch, capsys) -> tuple[object, str]:
    """``debiasing_real.py *argv`` run in this process (its main(), as the script runs it):
    the exit code and what it wrote to stderr. A refusal is argparse's, before any work."""
    module = bench[0]
    monkeypatch.setattr(sys, "argv", ["debiasing_real.py", *argv])
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        module.main()
    return info.value.code, capsys.readouterr().err


def test_a_cut_below_two_documents_is_refused(bench, monkeypatch, capsys):
    code, err = _refusal(bench, ["--suite", "--cut", "1"], monkeypatch, capsys)
    assert code == 2 and "--cut must be at least 2" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--bias", "--suite"], "does not combine with --suite"),
     (["--synthetic", "20", "--features", "0"], "--features must be at least 1")],
)  # fmt: skip
def test_bias_and_features_misuse_is_refused(bench, argv, message, monkeypatch, capsys):
    code, err = _refusal(bench, argv, monkeypatch, capsys)
    assert code == 2 and message in err


@pytest.fixture(scope="module")
def bench():
    """The benchmark module, and arguments of a small synthetic setup (``Setup``)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import debiasing_real
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))

    def args(model: str, sessions: int) -> Namespace:
        return Namespace(fraction=0.25, eta=1.0, logger="production", temperature=1.0,
                         sessions=sessions, swap=0.1, trees=10, leaves=8, max_depth=-1,
                         click_model=model, relevance="binarized")  # fmt: skip

    return debiasing_real, args, synthetic(80, 20, seed=0)


def test_context_option_gives_devices_their_curves_and_the_rows_their_ids(bench):
    bench, args, data = bench
    a = args("pbm", 6000)
    a.context, a.context_share, a.context_etas = True, 0.3, [2.0, 0.5]
    a.context_concentration = None
    s = bench.Setup(data, data, a, seed=0)
    assert set(s.log["device"].unique().to_list()) == {"phone", "desktop"}
    curves = dict(zip(s.theta_context.contexts.labels, s.theta_context.contexts.theta,
                      strict=True))  # fmt: skip
    assert curves["device=phone"][3] < curves["device=desktop"][3]
    np.testing.assert_array_equal(s.theta_context.theta, s.theta.theta)  # pooled unchanged
    assert s.click_ranker().context == "device"
    _, _, _, pos, _ = bench._baselines.session_rows(s.train, s.log, "device")
    assert pos.max() >= 10  # desktop's ranks are ids 0..9, the phones' 10..19
    assert bench._users(a).startswith(" context phone=0.3 eta=2/0.5")


def test_click_model_option_draws_the_clicks_from_that_model(bench):
    bench, args, data = bench
    clicks = {}
    for model in ("pbm", "cascade"):
        log = bench.Setup(data, data, args(model, 3000), seed=0).log
        clicks[model] = log.group_by("session").agg(n=pl.col("click").sum())["n"].max()
    # a cascade user leaves after the first click; PBM users click every attractive result
    assert clicks["cascade"] == 1 and clicks["pbm"] > 1

    # runs with other users are named after them (suite cells and --data runs alike)
    def users(model="pbm", relevance="binarized", eta=1.0, swap=0.1):
        return bench._users(Namespace(click_model=model, relevance=relevance, eta=eta,
                                      swap=swap))  # fmt: skip

    assert users(swap=0.0) == " no-interventions"

    assert users() == "" and users("dbn") == " dbn" and users(relevance="graded") == " graded"
    assert users("ubm", eta=2.0) == " ubm eta=2"


@pytest.mark.parametrize("relevance", ["binarized", "graded"])
def test_every_click_model_and_relevance_map_builds_a_setup(bench, relevance):
    """Each ``--click-model`` with each ``--relevance``: a log, and the label from which a
    document is clicked whenever examined (``--bias``)."""
    bench, args, data = bench
    for model in bench.CLICK_MODELS:
        a = args(model, 500)
        a.relevance = relevance
        s = bench.Setup(data, data, a, seed=0)
        assert s.log.height > 0
        assert s.threshold == (3.0 if relevance == "binarized" else data.y.max())


def test_bias_option_shows_how_much_position_bias_the_users_leave(bench):
    """``--bias``: PBM users (eta = 1) click a relevant result at rank 10 about a tenth as
    often as at rank 1; users who browse as the UBM does, just below a click, far more."""
    bench, args, data = bench
    last = {}
    for model in ("pbm", "ubm"):
        text = bench.position_bias(model, lambda seed: (data, data), 0, args(model, 4000))
        lines = text.splitlines()
        assert "clicks a session" in lines[0] and "swap propensities" in lines[1]
        ctr = [float(v) for v in lines[2].split()[-10:]]
        assert len(ctr) == 10
        last[model] = ctr[-1] / ctr[0]
    assert last["pbm"] < 0.25 < 0.5 < last["ubm"]


def test_report_joins_the_rows_of_other_methods_on_the_same_seeds(bench):
    """``--report a.json b.json``: b's methods on a's seeds join a's rows (paired); rows of
    the same methods are more seeds."""
    bench, _, _ = bench
    dump = {}
    bench.merge_runs(dump, {"c": [{"default": 0.7, "_choice": "average"}, {"default": 0.6}]})
    bench.merge_runs(dump, {"c": [{"cips": 0.5}, {"cips": 0.4}], "d": [{"default": 0.1}]})
    assert dump["c"] == [{"default": 0.7, "_choice": "average", "cips": 0.5},
                         {"default": 0.6, "cips": 0.4}]  # fmt: skip
    bench.merge_runs(dump, {"c": [{"default": 0.8, "cips": 0.3}]})
    assert len(dump["c"]) == 3 and dump["d"] == [{"default": 0.1}]


def test_relevance_option_maps_the_labels_as_asked(bench):
    """``--relevance graded``: a middle grade is clicked more often than under the binarized
    map (0.1 + 0.9 * 3/15 = 0.28 against 0.1 when examined); --bias reads the top label."""
    bench, args, data = bench
    ctr = {}
    for relevance in ("binarized", "graded"):
        a = args("pbm", 3000)
        a.relevance = relevance
        s = bench.Setup(data, data, a, seed=0)
        shown = s.log.filter((pl.col("label") == 2) & (pl.col("position") == 1))
        ctr[relevance] = shown["click"].mean()
    assert s.threshold == data.y.max()
    assert ctr["binarized"] < 0.15 < 0.2 < ctr["graded"]


def test_folds_pool_a_folders_queries_and_test_each_once(bench):
    """``--folds k``: every query of train and test is tested in exactly one fold and
    trained on in the others; the split does not depend on the run's seed."""
    bench, _, data = bench
    train, test = data.subset(range(60)), data.subset(range(60, 80))
    folds = bench.pooled_folds(train, test, 3)
    assert [len(f) for f in folds] == [2, 2, 2]
    tested = sorted(q for _, te in folds for q in te.qid)
    assert tested == list(range(80))  # each pooled query in one test fold
    for tr, te in folds:
        assert set(tr.qid).isdisjoint(te.qid) and tr.n_queries + te.n_queries == 80
        assert abs(te.n_queries - 80 / 3) < 1 and tr.n_docs + te.n_docs == data.n_docs
    again = bench.pooled_folds(train, test, 3)
    assert all((a[1].X == b[1].X).all() for a, b in zip(folds, again, strict=True))
    # the folds of a data set are pooled in the report; other cells keep their names
    dump = {"D/Fold1 n=10 x": [{"a": 1}], "D/Fold2 n=10 x": [{"a": 2}], "E n=10 x": [{"a": 3}]}
    assert bench.pooled(dump) == {"D (2 folds) n=10 x": [{"a": 1}, {"a": 2}],
                                  "E n=10 x": [{"a": 3}]}  # fmt: skip


def test_suite_runs_on_a_data_folder_split_into_folds(tmp_path):
    """``--suite --data DIR --folds k``: the suite's grid on that folder's folds."""
    from clickrank.datasets import save_letor

    data = synthetic(60, 12, seed=1)
    folder = tmp_path / "letor"
    folder.mkdir()
    save_letor(data.subset(range(45)), folder / "train.txt")
    save_letor(data.subset(range(45, 60)), folder / "test.txt")
    out = tmp_path / "suite.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "debiasing_real.py"), "--suite", "--data",
           str(folder), "--folds", "2", "--seeds", "1", "--suite-sessions", "500",
           "--only", "production$", "--methods", "production,oracle", "--fraction", "0.5",
           "--json", str(out)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    dump = json.loads(out.read_text())
    assert sorted(dump) == ["letor/Fold1 n=500 production", "letor/Fold2 n=500 production"]
    assert "letor (2 folds) n=500 production | 2 |" in res.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--folds", "3"], "--folds needs --data"),
     (["--data", ".", "--folds", "1"], "at least 2 folds"),
     (["--suite", "--data", ".", "--cut", "14"], "drop --cut and --synthetic")],
)  # fmt: skip
def test_folds_misuse_is_refused(bench, argv, message, monkeypatch, capsys):
    code, err = _refusal(bench, argv, monkeypatch, capsys)
    assert code == 2 and message in err
