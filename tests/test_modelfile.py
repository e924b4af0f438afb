"""Saved models are checked before LightGBM parses them: one clear line, never a crash."""

from __future__ import annotations

import json
import pickle
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _safety import one_line_error
from click.testing import CliRunner

import clickrank as cr
from clickrank._core._modelfile import check_model_text, digest
from clickrank.cli import cli
from clickrank.lambdamart import LambdaMART


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("model")
    data = cr.synthetic(40, 12, seed=1)
    letor = cr.save_letor(data, root / "train.txt")
    model = LambdaMART(n_estimators=3, num_leaves=8, seed=0).fit(data).save(root / "m")
    return model, letor


def _copy(saved_model: Path, tmp_path: Path) -> Path:
    out = tmp_path / "m"
    out.mkdir()
    for name in ("model.txt", "meta.json"):
        (out / name).write_bytes((saved_model / name).read_bytes())
    return out


def _evaluate(model: Path, data: Path):
    return CliRunner().invoke(
        cli, ["evaluate", "--model", str(model), "--data", str(data), "--bootstrap", "10"]
    )


def test_meta_json_records_the_digest_size_and_feature_count_of_model_txt(saved):
    model, _ = saved
    meta = json.loads((model / "meta.json").read_text())
    raw = (model / "model.txt").read_bytes()
    assert meta["model_sha256"] == digest(raw) and meta["model_bytes"] == len(raw)
    assert meta["n_features_in"] == 6 and meta["format_version"] == 2
    assert LambdaMART.load(model).predict(np.zeros((2, 6))).shape == (2,)


def _edit_num_leaves(text: str) -> str:
    return text.replace("num_leaves=", "num_leaves=9999", 1)


def _set_meta(model: Path, **changes) -> None:
    meta = json.loads((model / "meta.json").read_text())
    for k, v in changes.items():
        if v is None:
            meta.pop(k)
        else:
            meta[k] = v
    (model / "meta.json").write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "case, expected",
    [
        ("num_leaves edited", "does not match the size and SHA-256 digest recorded"),
        ("num_leaves edited, digest updated", "tree_sizes"),
        ("junk", "line 1 is not 'tree'"),
        ("pickle", "binary data, e.g. a pickle"),
        ("truncated", "does not match the size and SHA-256 digest"),
        ("meta missing key", "missing key(s) best_iteration"),
        ("meta unknown key", "unknown key(s) colour"),
        ("meta unknown parameter", "unknown LambdaMART parameter(s) depth"),
        ("meta not an object", "expected a JSON object"),
        ("meta utf-16", "UTF-16-encoded"),
        ("meta future version", "format_version 99 is not supported"),
        ("meta bad digest", "must be a SHA-256 hex digest"),
        ("meta more features", "max_feature_idx is '5' but meta.json records 7 features"),
        ("no model.txt", "model.txt: missing; not a saved clickrank LambdaMART model"),
    ],
)
def test_a_broken_model_folder_is_one_line_naming_the_file(saved, tmp_path, case, expected):
    model, data = saved
    m = _copy(model, tmp_path)
    text = (m / "model.txt").read_text()
    if case == "num_leaves edited":
        (m / "model.txt").write_text(_edit_num_leaves(text))
    elif case == "num_leaves edited, digest updated":
        new = _edit_num_leaves(text).encode()
        (m / "model.txt").write_bytes(new)
        _set_meta(m, model_sha256=digest(new), model_bytes=len(new))
    elif case == "junk":
        (m / "model.txt").write_text("junk\n")
    elif case == "pickle":
        (m / "model.txt").write_bytes(pickle.dumps({"a": 1}))
    elif case == "truncated":
        (m / "model.txt").write_text(text[: len(text) // 2])
    elif case == "meta missing key":
        _set_meta(m, best_iteration=None)
    elif case == "meta unknown key":
        _set_meta(m, colour="blue")
    elif case == "meta unknown parameter":
        meta = json.loads((m / "meta.json").read_text())
        _set_meta(m, params={**meta["params"], "depth": 3})
    elif case == "meta not an object":
        (m / "meta.json").write_text("[1, 2]")
    elif case == "meta utf-16":
        (m / "meta.json").write_text((m / "meta.json").read_text(), encoding="utf-16")
    elif case == "meta future version":
        _set_meta(m, format_version=99)
    elif case == "meta bad digest":
        _set_meta(m, model_sha256="abc")
    elif case == "meta more features":
        _set_meta(m, n_features_in=7)
    elif case == "no model.txt":
        (m / "model.txt").unlink()
    msg = one_line_error(_evaluate(m, data))
    assert expected in msg and str(m) in msg


def test_a_model_applied_to_data_with_other_features_names_both(saved, tmp_path):
    model, _ = saved
    d = cr.synthetic(10, 5, seed=3)
    four = cr.save_letor(
        cr.RankingData(d.X[:, :4], d.y, d.qptr, d.qid, d.doc), tmp_path / "four.txt"
    )
    msg = one_line_error(_evaluate(model, four))
    assert msg == (
        f"Error: model {model} was trained on 6 features but data 'four.txt' has 4 features"
    )


def test_random_corruptions_are_refused_or_read_safely(saved, tmp_path):
    """Every corruption the checks let through is one LightGBM reads without crashing."""
    model, _ = saved
    text = (model / "model.txt").read_text()
    rng = random.Random(7)
    passed = []
    for trial in range(300):
        lines = text.split("\n")
        op = trial % 5
        if op == 0:
            i = rng.randrange(len(text))
            t = text[:i] + rng.choice("0 1=-\nab") + text[i + 1 :]
        elif op == 1:
            del lines[rng.randrange(len(lines))]
            t = "\n".join(lines)
        elif op == 2:
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            t = "\n".join(lines)
        elif op == 3:
            t = text[: rng.randrange(len(text))]
        else:
            i = rng.randrange(len(lines))
            if "=" in lines[i]:
                k, v = lines[i].split("=", 1)
                vals = v.split(" ")
                vals[rng.randrange(len(vals))] = str(rng.choice([-3, -1, 0, 7, 99999, 10**9]))
                lines[i] = k + "=" + " ".join(vals)
            t = "\n".join(lines)
        try:
            passed.append(check_model_text(t, 6, Path("model.txt")))
        except cr.DataFormatError:
            continue
    assert 0 < len(passed) < 300
    files = []
    for i, t in enumerate(passed):
        f = tmp_path / f"{i}.txt"
        f.write_text(t)
        files.append(str(f))
    # LightGBM in a child process: a crash there (abort, segfault) fails this test, not pytest
    code = (
        "import sys, numpy as np, lightgbm as lgb\n"
        "for f in sys.argv[1:]:\n"
        "    b = lgb.Booster(model_str=open(f).read())\n"
        "    b.predict(np.random.default_rng(0).normal(size=(20, 6)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *files], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_average_is_one_model_scoring_the_weighted_sum_and_saving_safely(tmp_path):
    """LambdaMART.average: every model's trees, leaves scaled; its text passes the checks,
    its predictions and SHAP contributions are the weighted sums, and it round-trips."""
    data = cr.synthetic(60, 12, seed=2)
    a = LambdaMART(n_estimators=4, num_leaves=4, seed=0).fit(data)
    b = LambdaMART(n_estimators=7, num_leaves=8, learning_rate=0.3, seed=1).fit(data)
    avg = LambdaMART.average([a, b], [0.25, -1.5])
    want = 0.25 * a.predict(data.X) - 1.5 * b.predict(data.X)
    np.testing.assert_allclose(avg.predict(data.X), want, rtol=1e-12, atol=1e-12)
    contrib = avg.booster_.predict(data.X, pred_contrib=True)
    np.testing.assert_allclose(contrib.sum(axis=1), want, rtol=1e-9, atol=1e-12)
    assert avg.best_iteration_ == 11 and avg.num_leaves == 8
    text = avg.booster_.model_to_string(num_iteration=-1)
    check_model_text(text, data.n_features, Path("model.txt"))  # tree_sizes recomputed
    loaded = LambdaMART.load(avg.save(tmp_path / "avg"))
    np.testing.assert_array_equal(loaded.predict(data.X), avg.predict(data.X))
    assert loaded.target_name_.startswith("average of")
    # the first ``trees`` of each (fewer where a model has fewer): what the bagged folds use
    first = LambdaMART.average([a, b], [0.5, 0.5], trees=5)
    assert first.best_iteration_ == 4 + 5
    half = 0.5 * a.booster_.predict(data.X) + 0.5 * b.booster_.predict(data.X, num_iteration=5)
    np.testing.assert_allclose(first.predict(data.X), half, rtol=1e-12, atol=1e-12)
    with pytest.raises(cr.InputError, match="one weight per model"):
        LambdaMART.average([a, b], [1.0])
    with pytest.raises(cr.InputError, match="finite"):
        LambdaMART.average([a, b], [1.0, float("nan")])
