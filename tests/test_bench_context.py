"""benchmarks/bench_context.py: the coverage and cost parts run and report what they say."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_context_benchmark_reports_coverage_the_test_and_the_cost(tmp_path):
    out = tmp_path / "context.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_context.py"), "--logs", "3",
           "--per-log", "4000", "--methods", "swap", "randomized", "--scenarios", "differ",
           "same", "--sessions", "5000", "--repeats", "1", "--tmp", str(tmp_path),
           "--json", str(out)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(out.read_text())
    cells = got["coverage"]["cells"]
    assert set(cells) == {"swap/differ", "swap/same", "randomized/differ", "randomized/same"}
    for cell in cells.values():
        assert cell["logs"] == 3 and cell["failed"] == 0
        assert set(cell["raw"]) == {"desktop", "phone", "tablet"}
        assert all(len(v) == 5 and all(0 <= x <= 1 for x in v) for v in cell["raw"].values())
        assert 0 <= cell["rejection_rate"] <= 1
    # curves η 0.5 / 2 / 1 over 4,000 sessions: the test sees that they differ
    assert cells["swap/differ"]["rejection_rate"] == 1.0
    cost = got["cost"]["estimators"]
    assert set(cost) == {"swap", "randomized"}
    assert all(c["pooled"] > 0 and c["context"] > 0 for c in cost.values())
    assert "[cost] swap: pooled" in res.stdout and "homogeneity rejects" in res.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["context.json"]  # the log is gone


def test_the_context_benchmark_reports_the_feature_models_coverage_and_test(tmp_path):
    out = tmp_path / "features.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_context.py"), "--parts", "features",
           "--logs", "2", "--per-log", "3000", "--json", str(out)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    cells = json.loads(out.read_text())["features"]["cells"]
    assert set(cells) == {"slope 0.6", "slope 0.1", "slope 0"}
    for cell in cells.values():
        for key in ("theta", "a", "w", "pooled"):
            assert len(cell[key]) == 5 and all(0 <= x <= 1 for x in cell[key])
    # η from 0.4 to 1.6 across the segments: the test sees it in 3,000 sessions
    assert cells["slope 0.6"]["rejection_rate"] == 1.0
    assert "[features] plackett-luce, slope 0: 2 logs x 3,000 sessions" in res.stdout


def test_the_feature_models_benchmark_runs_on_a_deterministic_logger(tmp_path):
    out = tmp_path / "features.json"
    cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_context.py"), "--parts", "features",
           "--logger", "deterministic", "--logs", "1", "--per-log", "5000",
           "--json", str(out)]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    got = json.loads(out.read_text())["features"]
    assert got["logger"] == "deterministic" and got["cells"]["slope 0.6"]["rejection_rate"] == 1.0
    assert "[features] deterministic, slope 0: 1 logs x 5,000 sessions" in res.stdout
