"""Propensities per context: interval coverage, the homogeneity test's level and power, and
the cost of the per-context curves against the pooled estimate on the same log.

Run ``python benchmarks/bench_context.py`` (both parts) or pick them:

    python benchmarks/bench_context.py --parts coverage --logs 200 --json context.json
    python benchmarks/bench_context.py --parts cost --sessions 1000000
    python benchmarks/bench_context.py --parts features --logs 200

Parts
-----
coverage  ``--logs`` independent simulated logs per estimator and scenario, each with a
          ``device`` column: desktop (65 % of the sessions), phone (30 %) and tablet (5 %).
          Scenario ``differ``: PBMs of η 0.5, 2 and 1; ``same``: η 1 for all three (one
          shared curve, so every rejection of the homogeneity test is false). Per
          estimator and context: the share of the 95 % intervals (the context's raw
          interval, the estimator's own, and the shrunk curve's,
          :meth:`ContextCurves.bounds`) that cover the true θ at positions 2..K, and the
          homogeneity test's rejection rate at 5 % (its size under ``same``, its power
          under ``differ``; also on logs a tenth as long, ``differ-small``, where power is
          not trivially 1). Swap (Swap(0.5)), randpair (RandPair(0.8)) and randomized
          (Randomize(1.0)) logs come from a deterministic logger over synthetic(300, 20);
          harvesting and EM logs from a Plackett-Luce logger over synthetic(60, 10) (no
          interventions; EM's pooled curve with its default 100-replicate session
          bootstrap, its contexts' with their observed information).
features  ``--logs`` logs per slope of a context with many values: 1,000 segments with a
          feature x uniform on [-1, 1], equal shares, clicks by PBMs with
          θ_k = k^-(1 + s x) (slopes s 0.6, 0.1 and 0, the last one curve for all), a
          Plackett-Luce logger over synthetic(60, 10), no interventions.
          ``estimate_propensities(log, "em", context_features="x")``: coverage of the 95 %
          intervals of θ_k(x) at every context, of the coefficients a_k and w_k, of the
          pooled curve (its truth each position's mean curve over its impressions), and
          the Wald test's rejection rate (its size at s = 0, its power otherwise). With
          ``--logger deterministic``: a deterministic logger over synthetic(300, 20),
          every document at one position, and ``method="regression-em"`` (the level from
          regression EM's pooled curve, the slopes within documents); ``--logger swap``:
          the same logger with 10 % rank-1 swaps and ``method="swap"``.
cost      one parquet log of ``--sessions`` sessions (top 10, three loggers and 10 % swap,
          randpair and randomized sessions each, the device column): seconds of each
          estimator's pooled estimate and of the same with ``context="device"``, and their
          ratio (best of ``--repeats``; both read the parquet file).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

from clickrank.clickmodels import PBM, PowerLaw
from clickrank.datasets import synthetic
from clickrank.policies import DeterministicPolicy, MixturePolicy, PlackettLuce
from clickrank.propensity import estimate_propensities
from clickrank.simulation import Context, Randomize, RandPair, Swap, simulate

K = 6
SHARES = {"desktop": 0.65, "phone": 0.30, "tablet": 0.05}
SCENARIOS = {
    "differ": {"desktop": 0.5, "phone": 2.0, "tablet": 1.0},
    "same": {"desktop": 1.0, "phone": 1.0, "tablet": 1.0},
}
#: estimator -> (interventions, passive: a Plackett-Luce log without interventions)
ESTIMATORS = {
    "swap": ([Swap(0.5)], False),
    "randpair": ([RandPair(0.8)], False),
    "randomized": ([Randomize(1.0)], False),
    "harvest-allpairs": ([], True),
    "em": ([], True),
}


def _device(etas: dict[str, float]) -> Context:
    return Context("device", SHARES, {v: PBM(PowerLaw(etas[v])) for v in SHARES})


def _logs(method: str, scenario: str, n_logs: int, per_log: int, seed: int):
    """``n_logs`` independent logs of ``per_log`` sessions (one simulation, split by
    session range), yielded one at a time."""
    interventions, passive = ESTIMATORS[method]
    data = synthetic(60, 10, seed=1) if passive else synthetic(300, 20, seed=0)
    policy = PlackettLuce(data.X[:, 0] * 2.0) if passive else DeterministicPolicy(data.X[:, 0])
    etas = SCENARIOS["differ" if scenario == "differ-small" else scenario]
    step = max(per_log, (1_000_000 // per_log) * per_log)
    for start in range(0, n_logs * per_log, step):
        n = min(step, n_logs * per_log - start)
        chunk = simulate(data, policy=policy, n_sessions=n, first_session=start, top_k=K,
                         interventions=interventions, seed=seed, context=_device(etas))  # fmt: skip
        chunk = chunk.with_columns(rep=(pl.col("session") // per_log).cast(pl.Int64))
        for part in chunk.partition_by("rep", maintain_order=True):
            yield part.drop("rep"), etas


def coverage(n_logs: int, per_log: int, methods: list[str], out: str | None,
             scenarios: list[str]) -> dict:  # fmt: skip
    """Coverage of the per-context intervals and the homogeneity test's rejection rate
    (module docstring); ``out``: the results as JSON, rewritten after every cell."""
    results: dict = {"logs": n_logs, "per_log": per_log, "shares": SHARES, "cells": {}}
    truth_of = {eta: 1.0 / np.arange(1, K + 1) ** eta for eta in (0.5, 1.0, 2.0)}
    for method in methods:
        for s, scenario in enumerate(("differ", "same", "differ-small")):
            if scenario not in scenarios:
                continue
            sessions = per_log // 10 if scenario == "differ-small" else per_log
            raw = {v: [] for v in SHARES}
            shrunk = {v: [] for v in SHARES}
            rejected, failed, seconds = [], 0, 0.0
            for log, etas in _logs(method, scenario, n_logs, sessions, seed=100 + s):
                t = time.perf_counter()
                try:
                    ctx = estimate_propensities(log, method=method, context="device").contexts
                except Exception:  # noqa: BLE001 - a failed estimate is a miss everywhere
                    failed += 1
                    for v in SHARES:
                        raw[v].append(np.zeros(K - 1))
                        shrunk[v].append(np.zeros(K - 1))
                    continue
                seconds += time.perf_counter() - t
                bounds = ctx.bounds(0.05)
                for i, (v,) in enumerate(ctx.values):
                    truth = truth_of[etas[v]][1:]
                    ci = ctx.curves[i].conf_int(0.05).select("lower", "upper").to_numpy()[1:]
                    raw[v].append(np.nan_to_num((ci[:, 0] <= truth) & (truth <= ci[:, 1])))
                    lo, hi = bounds[i, 1:, 0], bounds[i, 1:, 1]
                    shrunk[v].append(np.nan_to_num((lo <= truth) & (truth <= hi)))
                rejected.append(float(ctx.homogeneity["p_value"] < 0.05))
            cell = {
                "sessions": sessions,
                "logs": n_logs,
                "failed": failed,
                "seconds_per_log": seconds / max(n_logs - failed, 1),
                "rejection_rate": float(np.mean(rejected)) if rejected else float("nan"),
                "raw": {v: np.mean(h, axis=0).tolist() for v, h in raw.items()},
                "shrunk": {v: np.mean(h, axis=0).tolist() for v, h in shrunk.items()},
            }
            results["cells"][f"{method}/{scenario}"] = cell
            _print_cell(method, scenario, cell, n_logs)
            if out:
                Path(out).write_text(json.dumps(results, indent=1) + "\n")
    return results


def _print_cell(method: str, scenario: str, cell: dict, n_logs: int) -> None:
    se = np.sqrt(0.95 * 0.05 / n_logs)
    what = "size" if scenario == "same" else "power"
    print(f"[coverage] {method}/{scenario}: {n_logs} logs x {cell['sessions']:,} sessions, "
          f"{cell['failed']} failed, {cell['seconds_per_log']:.2f} s a log; homogeneity "
          f"rejects {cell['rejection_rate']:.3f} at 5 % ({what})", flush=True)  # fmt: skip
    for kind in ("raw", "shrunk"):
        parts = [f"{v} {np.mean(c):.3f} (min {np.min(c):.3f})" for v, c in cell[kind].items()]
        print(f"    {kind:<6} coverage, positions 2..{K} mean (min): " + "; ".join(parts)
              + f"  [nominal 0.95, SE of a position {se:.3f}]", flush=True)  # fmt: skip


#: Segments of the ``features`` part, and their feature.
SEGMENTS = 1000
SLOPES = (0.6, 0.1, 0.0)


def _feature_data(logger: str):
    """The documents and the logger of the ``features`` part: a Plackett-Luce logger over
    synthetic(60, 10), or a deterministic one over synthetic(300, 20)."""
    if logger in ("deterministic", "swap"):
        data = synthetic(300, 20, seed=0)
        return data, DeterministicPolicy(data.X[:, 0])
    data = synthetic(60, 10, seed=1)
    return data, PlackettLuce(data.X[:, 0] * 2.0)


def _feature_logs(slope: float, n_logs: int, per_log: int, seed: int, logger: str):
    """``n_logs`` logs of ``per_log`` sessions from :data:`SEGMENTS` segments whose
    curves are k^-(1 + slope x) (the ``features`` part), with the feature column ``x``."""
    x = np.random.default_rng(0).uniform(-1, 1, SEGMENTS)
    names = [f"s{i:04d}" for i in range(SEGMENTS)]
    models = {v: PBM(PowerLaw(1 + slope * xv)) for v, xv in zip(names, x, strict=True)}
    segment = Context("segment", dict.fromkeys(names, 1.0), models)
    data, policy = _feature_data(logger)
    of_segment = dict(zip(names, x.tolist(), strict=True))
    feature = pl.col("segment").cast(pl.String).replace_strict(of_segment, return_dtype=pl.Float64)
    step = max(per_log, (1_000_000 // per_log) * per_log)
    for start in range(0, n_logs * per_log, step):
        n = min(step, n_logs * per_log - start)
        swaps = [Swap(0.1)] if logger == "swap" else None
        chunk = simulate(data, policy=policy, n_sessions=n, first_session=start, top_k=K,
                         seed=seed, context=segment, interventions=swaps)  # fmt: skip
        chunk = chunk.with_columns(x=feature, rep=(pl.col("session") // per_log).cast(pl.Int64))
        for part in chunk.partition_by("rep", maintain_order=True):
            yield part.drop("rep", "segment")


def features(n_logs: int, per_log: int, out: str | None, logger: str = "plackett-luce") -> dict:
    """Coverage and the Wald test of the feature model (module docstring, ``features``)."""
    results: dict = {"logs": n_logs, "per_log": per_log, "segments": SEGMENTS,
                     "logger": logger, "cells": {}}  # fmt: skip
    z = 1.959963984540054
    logk = np.log(np.arange(1, K + 1))
    data = _feature_data(logger)[0]
    method, kw = {
        "plackett-luce": ("em", {"n_boot": 0}),
        "swap": ("swap", {}),
        "deterministic": ("regression-em", {"data": data, "n_boot": 0}),
    }[logger]
    for i, slope in enumerate(SLOPES):
        theta_cover, a_cover, w_cover, pooled_cover, rejected = [], [], [], [], []
        seconds = 0.0
        for log in _feature_logs(slope, n_logs, per_log, seed=300 + i, logger=logger):
            t = time.perf_counter()
            p = estimate_propensities(log, method=method, context_features="x", **kw)
            seconds += time.perf_counter() - t
            m = p.contexts
            x = np.array([float(v[0]) for v in m.values])
            truth = np.exp(-(1 + slope * x)[:, None] * logk)
            lo, hi = m.bounds(0.05)[..., 0], m.bounds(0.05)[..., 1]
            theta_cover.append(((lo <= truth) & (truth <= hi)).mean(axis=0)[1:])
            # the pooled curve's truth: each position's mean curve over its impressions
            mean = (truth * m.n).sum(axis=0) / m.n.sum(axis=0)
            ci = p.conf_int(0.05).select("lower", "upper").to_numpy()
            pooled_cover.append(((ci[:, 0] <= mean) & (mean <= ci[:, 1]))[1:])
            a_true, w_true = -(1 + slope * m.center[0]) * logk, -slope * logk
            for cover, col, true in ((a_cover, 0, a_true), (w_cover, 1, w_true)):
                b, se = m.coef[:, col], m.coef_se[:, col]
                cover.append((np.abs(b - true) <= z * se)[1:])
            rejected.append(float(m.homogeneity["p_value"] < 0.05))
        cell = {
            "slope": slope,
            "seconds_per_log": seconds / n_logs,
            "rejection_rate": float(np.mean(rejected)),
            "theta": np.mean(theta_cover, axis=0).tolist(),
            "a": np.mean(a_cover, axis=0).tolist(),
            "w": np.mean(w_cover, axis=0).tolist(),
            "pooled": np.mean(pooled_cover, axis=0).tolist(),
        }
        results["cells"][f"slope {slope:g}"] = cell
        what = "size" if slope == 0 else "power"
        print(f"[features] {logger}, slope {slope:g}: {n_logs} logs x {per_log:,} sessions, "
              f"{cell['seconds_per_log']:.2f} s a log; the Wald test rejects "
              f"{cell['rejection_rate']:.3f} at 5 % ({what})", flush=True)  # fmt: skip
        for key in ("theta", "a", "w", "pooled"):
            c = cell[key]
            print(
                f"    {key:<5} coverage, positions 2..{K}: "
                + " ".join(f"{v:.3f}" for v in c)
                + f"  [nominal 0.95, SE {np.sqrt(0.95 * 0.05 / n_logs):.3f}]",
                flush=True,
            )
        if out:
            Path(out).write_text(json.dumps(results, indent=1) + "\n")
    return results


def cost(n_sessions: int, repeats: int, methods: list[str], tmp: str | None) -> dict:
    """Seconds of each estimator pooled and per context on one parquet log (module
    docstring), and their ratios."""
    data = synthetic(300, 20, seed=0)
    rankers = [DeterministicPolicy(data.X[:, j], name=f"ranker{j}") for j in range(3)]
    folder = Path(tempfile.mkdtemp(dir=tmp))
    path = folder / "log.parquet"
    simulate(data, policy=MixturePolicy(rankers), n_sessions=n_sessions, top_k=10, seed=0,
             interventions=[Swap(0.1), RandPair(0.1), Randomize(0.1)],
             context=_device(SCENARIOS["differ"])).write_parquet(path)  # fmt: skip
    out = {"sessions": n_sessions, "rows": n_sessions * 10, "estimators": {}}
    for method in methods:
        times = {}
        for label, kw in (("pooled", {}), ("context", {"context": "device"})):
            best = float("inf")
            for _ in range(repeats):
                t = time.perf_counter()
                estimate_propensities(path, method=method, **kw)
                best = min(best, time.perf_counter() - t)
            times[label] = best
        ratio = times["context"] / times["pooled"]
        out["estimators"][method] = {**times, "ratio": ratio}
        print(f"[cost] {method}: pooled {times['pooled']:.2f} s, per context "
              f"{times['context']:.2f} s: {ratio:.2f}x ({n_sessions:,} sessions, 3 devices)",
              flush=True)  # fmt: skip
    path.unlink()
    folder.rmdir()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--parts", nargs="+", default=["coverage", "cost"],
                    choices=["coverage", "cost", "features"])  # fmt: skip
    ap.add_argument("--logs", type=int, default=200, help="coverage: logs per cell")
    ap.add_argument("--per-log", type=int, default=20_000, help="coverage: sessions a log")
    ap.add_argument("--methods", nargs="+", default=list(ESTIMATORS), choices=list(ESTIMATORS))
    ap.add_argument(
        "--scenarios",
        nargs="+",
        default=["differ", "same", "differ-small"],
        choices=["differ", "same", "differ-small"],
        help="coverage: scenarios",
    )
    ap.add_argument("--sessions", type=int, default=1_000_000, help="cost: sessions")
    ap.add_argument("--repeats", type=int, default=2, help="cost: best of this many")
    ap.add_argument("--logger", default="plackett-luce",
                    choices=["plackett-luce", "deterministic", "swap"],
                    help="features: the logger (deterministic: regression EM's level; swap: "
                    "the same with 10 %% swaps, the swap estimate's level)")  # fmt: skip
    ap.add_argument("--json", default=None, help="write the results here")
    ap.add_argument("--tmp", default=None, help="cost: folder for the temporary parquet log")
    args = ap.parse_args()
    results = {}
    if "coverage" in args.parts:
        results["coverage"] = coverage(
            args.logs, args.per_log, args.methods, args.json, args.scenarios
        )
    if "features" in args.parts:
        results["features"] = features(args.logs, args.per_log, args.json, args.logger)
    if "cost" in args.parts:
        results["cost"] = cost(args.sessions, args.repeats, args.methods, args.tmp)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
