"""The studies in simulations/ run end to end (``--quick``) and write what they promise.

Each study's ``main`` is called in-process with ``--quick --out <tmp>``; the
checks are invariants that hold at any size, not numbers of a previous run.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUDIES = ROOT / "simulations"

pytestmark = pytest.mark.slow


def _run(name: str, out: Path) -> dict:
    spec = importlib.util.spec_from_file_location(f"study_{name}", STUDIES / name / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(STUDIES))
    try:
        spec.loader.exec_module(module)
        results = module.main(["--quick", "--out", str(out)])
    finally:
        sys.path.remove(str(STUDIES))
    report = (out / "report.md").read_text(encoding="utf-8")
    saved = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert saved["study"] == name
    assert report.startswith("# ") and "--quick" in report
    for link in report.split("](")[1:]:  # every figure the report shows exists and is a PNG
        target = out / link.split(")")[0]
        assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", target
    return results


def _mean(rows: list[dict], method: str, **where) -> float:
    hits = [r for r in rows if r["method"] == method and all(r[k] == v for k, v in where.items())]
    assert len(hits) == 1, (method, where, hits)
    return hits[0]["mean"]


def test_learning_curves_quick(tmp_path):
    res = _run("learning_curves", tmp_path)
    sizes = sorted({r["sessions"] for r in res["curves"]})
    assert sizes == sorted(res["config"]["sessions"])
    for n in sizes:
        for m in ("naive", "ips (true θ)", "ips (swap θ̂)", "skip-above"):
            assert 0.0 <= _mean(res["curves"], m, sessions=n) <= 1.0
    # the oracle trains on the true labels of every document: it beats the logging ranker
    assert _mean(res["references"], "oracle") > _mean(res["references"], "production")


def test_severity_quick(tmp_path):
    res = _run("severity", tmp_path)
    etas = sorted({r["eta"] for r in res["curves"]})
    assert etas == sorted(float(e) for e in res["config"]["etas"])
    # at eta = 0 every theta is 1, so the IPS gains are the click counts: the same model
    assert _mean(res["curves"], "ips (true θ)", eta=0.0) == _mean(res["curves"], "naive", eta=0.0)


def test_misspecified_propensities_quick(tmp_path):
    res = _run("misspecified_propensities", tmp_path)
    # eta_used = 0 means theta = 1 everywhere: exactly the naive click-count target
    assert _mean(res["sweep"], "ips", eta=0.0) == _mean(res["sweep"], "naive", eta=None)
    assert {r["estimator"] for r in res["estimation_error"]} == {"swap", "randomized"}


def test_click_models_quick(tmp_path):
    res = _run("click_models", tmp_path)
    models = set(res["config"]["click_models"])
    assert {r["click_model"] for r in res["ndcg"]} == models
    # the true theta exists only for models with a position-only examination curve
    with_truth = {r["click_model"] for r in res["ndcg"] if r["method"] == "ips (true θ)"}
    assert with_truth == {"pbm", "trust"} & models
    # every log gets a click-model comparison and a fitted model-aware target
    assert {r["click_model"] for r in res["model_selection"]} == models
    aware = {r["click_model"] for r in res["ndcg"] if r["method"] == "model-aware (fitted)"}
    assert aware == models
    # under the strict cascade no click has a click above it: cascade IPS is the naive target
    if "cascade" in models:
        for seed in res["config"]["seeds"]:
            assert _mean(
                res["runs"], "model-aware (true model)", click_model="cascade", seed=seed
            ) == _mean(res["runs"], "naive", click_model="cascade", seed=seed)


def test_benchmark_quick(tmp_path):
    res = _run("benchmark", tmp_path)
    metric = res["config"]["synthetic_metrics"][0]
    syn = res["synthetic"]
    lm = _mean(syn, "clickrank LambdaMART", metric=metric)
    assert _mean(syn, "random", metric=metric) < _mean(syn, "linear pointwise", metric=metric) < lm
    # the same algorithm as LightGBM's lambdarank with the same trees
    assert abs(lm - _mean(syn, "LightGBM lambdarank", metric=metric)) < 0.01
