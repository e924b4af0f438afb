"""Propensity estimation: speed/memory at scale, accuracy at 10^7 sessions, interval coverage.

Run ``python benchmarks/bench_propensity.py`` (all parts) or pick parts:

    python benchmarks/bench_propensity.py --parts scale coverage --sessions 10000000

Parts
-----
baseline   clickrank's lazy sufficient-statistics estimator vs. two direct ways of computing
           the same randomized estimate in the same process (a pandas group-by and a dense
           numpy [sessions, positions] click matrix), on a 10^6-session log; prints ratios
           and checks the three agree.
scale-all  every estimator on one 10^7-session log (3 logging rankers plus swap, randpair and
           randomized sessions): time and peak RSS per estimator, each in a child process.
scale      a randomized top-10 log with ``--sessions`` sessions (default 10^7, i.e. 10^8
           rows) streamed to parquet, then estimated lazily in a child process: wall time,
           peak RSS, and the largest relative error of θ̂ over the 10 positions (PBM,
           θ_p = 1/p).
cost       regression EM's point estimate (what the default learner runs on a log of one
           deterministic ranker) against one LightGBM lambdarank fit (100 trees) on the same
           documents, in the same process: synthetic(1000, 20) and MQ2008 Fold1 (when the
           shared data is there), 20,000 sessions, best of 3.
rem-bias   regression EM with and without its orthogonal correction on the same logs of one
           deterministic ranker: bias and mean absolute error of log θ̂, seconds an estimate
           (synthetic(300, 20), 12 logs; MQ2008 Fold1, 6 logs, when the shared data is there).
coverage   empirical coverage of the 95% intervals over many independent simulated logs
           (``--logs``, default 1000 per cell; ``--cells`` picks some; ``--json`` keeps the
           results as they come): swap at eta 0.5/1/2, randpair, randomized, harvest
           pivot/adjacent/allpairs, EM (session bootstrap; ``--em-logs``), regression EM
           (one deterministic production ranker, sandwich intervals or ``--rem-boot``
           query-bootstrap replicates; ``--rem-logs``; ``regression-em-redrawn``: data and
           ranker redrawn for every log, ``--rem-queries`` queries each, with the bias).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import polars as pl

from clickrank.clickmodels import make_click_model, power_law
from clickrank.datasets import synthetic
from clickrank.policies import DeterministicPolicy, MixturePolicy
from clickrank.propensity import em, estimate_propensities, randomized
from clickrank.propensity._harvest import cell_statistics, harvest_from_cells
from clickrank.propensity._randomized import randomized_from_counts
from clickrank.propensity._swap import pair_from_counts
from clickrank.simulation import Randomize, RandPair, Swap, simulate

K = 10


def _data():
    return synthetic(300, 20, seed=0)


# -- baseline -----------------------------------------------------------------------------


def bench_baseline(n_sessions: int = 1_000_000) -> dict:
    data = _data()
    log = simulate(
        data,
        policy=DeterministicPolicy(data.X[:, 0]),
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=n_sessions,
        interventions=[Randomize(1.0)],
        seed=3,
    )
    t0 = time.perf_counter()
    ours = randomized(log)
    t_ours = time.perf_counter() - t0

    import pandas as pd

    t0 = time.perf_counter()
    pdf = pd.DataFrame({c: log[c].to_numpy() for c in ("session", "position", "click")})
    wide = pdf.pivot(index="session", columns="position", values="click").astype(float)
    m = wide.mean()
    cov = wide.cov(ddof=0)
    n = len(wide)
    theta_pd = (m / m.iloc[0]).to_numpy()
    var_pd = (
        np.diag(cov) / m**2 + cov.iloc[0, 0] / m.iloc[0] ** 2 - 2 * cov.iloc[:, 0] / (m * m.iloc[0])
    ).to_numpy() / n
    t_pandas = time.perf_counter() - t0

    t0 = time.perf_counter()
    C = log.sort("session", "position")["click"].to_numpy().reshape(-1, K).astype(np.float64)
    mn = C.mean(axis=0)
    cv = np.cov(C, rowvar=False, bias=True)
    theta_np = mn / mn[0]
    var_np = (cv.diagonal() / mn**2 + cv[0, 0] / mn[0] ** 2 - 2 * cv[:, 0] / (mn * mn[0])) / len(C)
    t_numpy = time.perf_counter() - t0

    assert np.allclose(ours.theta, theta_pd) and np.allclose(ours.theta, theta_np)
    assert np.allclose(ours.se[1:], np.sqrt(var_pd[1:])) and np.allclose(
        ours.se[1:], np.sqrt(var_np[1:])
    )
    out = {"rows": log.height, "ours_s": t_ours, "pandas_s": t_pandas, "dense_numpy_s": t_numpy}
    print(
        f"[baseline] {log.height:,} rows: clickrank {t_ours:.3f}s | pandas pivot "
        f"{t_pandas:.3f}s (x{t_pandas / t_ours:.1f}) | dense numpy {t_numpy:.3f}s "
        f"(x{t_numpy / t_ours:.1f}); all three agree"
    )
    return out


# -- scale --------------------------------------------------------------------------------


def _peak_rss_mib() -> float:
    """Peak resident set size of this process (VmHWM; ru_maxrss survives exec on Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _estimate_child(path: str, method: str = "randomized") -> None:
    """Child process: estimate from the parquet folder, print JSON with time and peak RSS."""
    t0 = time.perf_counter()
    kw = {"n_boot": 0} if method == "em" else {}
    res = estimate_propensities(pl.scan_parquet(str(Path(path) / "*.parquet")), method=method, **kw)
    dt = time.perf_counter() - t0
    rss = _peak_rss_mib()
    print(
        json.dumps(
            {
                "seconds": dt,
                "peak_rss_mib": rss,
                "theta": res.theta.tolist(),
                "se": res.se.tolist(),
                "n_sessions": res.n_sessions,
            }
        )
    )


def bench_scale(n_sessions: int = 10_000_000, keep: str | None = None) -> dict:
    data = _data()
    with tempfile.TemporaryDirectory(dir=keep) as tmp:
        out = Path(tmp) / "log"
        t0 = time.perf_counter()
        simulate(
            data,
            policy=DeterministicPolicy(data.X[:, 0]),
            click_model=make_click_model("pbm", eta=1.0),
            n_sessions=n_sessions,
            interventions=[Randomize(1.0)],
            seed=1,
            chunk_size=1_000_000,
            out=out,
        )
        t_sim = time.perf_counter() - t0
        size = sum(f.stat().st_size for f in out.glob("*.parquet"))
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(out)],
            check=True,
            capture_output=True,
            text=True,
        )
        res = json.loads(proc.stdout.strip().splitlines()[-1])
    theta = np.array(res["theta"])
    truth = power_law(K, 1.0)
    rel = np.abs(theta / truth - 1)
    print(
        f"[scale] {n_sessions:,} sessions x {K} = {n_sessions * K:,} rows "
        f"(parquet {size / 2**20:.0f} MiB, simulated in {t_sim:.0f}s)"
    )
    print(
        f"[scale] randomized estimate: {res['seconds']:.1f}s, peak RSS "
        f"{res['peak_rss_mib']:.0f} MiB (child process, includes Python + polars)"
    )
    print("[scale] theta   " + " ".join(f"{x:.4f}" for x in theta))
    print(
        "[scale] rel.err "
        + " ".join(f"{x:.4f}" for x in rel)
        + f"   max = {rel.max():.4%} (goal < 1%)"
    )
    return {**res, "max_rel_error": float(rel.max()), "simulate_s": t_sim}


def bench_scale_all(n_sessions: int = 10_000_000, keep: str | None = None) -> dict:
    """Every estimator on one 10^7-session log: 3 logging rankers + swap/randpair/randomized."""
    data = _data()
    mix = MixturePolicy([DeterministicPolicy(data.X[:, j], name=f"r{j}") for j in range(3)])
    out_res = {}
    with tempfile.TemporaryDirectory(dir=keep) as tmp:
        out = Path(tmp) / "log"
        t0 = time.perf_counter()
        simulate(
            data,
            policy=mix,
            click_model=make_click_model("pbm", eta=1.0),
            n_sessions=n_sessions,
            seed=2,
            chunk_size=1_000_000,
            out=out,
            interventions=[Swap(0.2), RandPair(0.2), Randomize(0.2)],
        )
        print(
            f"[scale-all] {n_sessions:,} sessions x {K} rows, 3 rankers + 20% swap, 20% "
            f"randpair, 20% randomized; simulated in {time.perf_counter() - t0:.0f}s"
        )
        truth = power_law(K, 1.0)
        for method in ("swap", "randpair", "randomized", "harvest-pivot", "harvest-allpairs", "em"):
            proc = subprocess.run(
                [sys.executable, __file__, "--child", str(out), "--method", method],
                check=True,
                capture_output=True,
                text=True,
            )
            res = json.loads(proc.stdout.strip().splitlines()[-1])
            rel = np.abs(np.array(res["theta"]) / truth - 1)
            print(
                f"[scale-all] {method:<17} {res['seconds']:6.1f}s  peak RSS "
                f"{res['peak_rss_mib']:6.0f} MiB  max rel. error {rel.max():.2%}"
            )
            out_res[method] = res
    return out_res


# -- coverage ------------------------------------------------------------------------------


def _per_log_counts(data, n_logs, per_log, *, interventions, eta, top_k, seed, by):
    """Simulate n_logs independent logs as one session range; group counts per log."""
    model = make_click_model("pbm", eta=eta)
    frames = []
    step = max(per_log, (2_000_000 // per_log) * per_log)
    for start in range(0, n_logs * per_log, step):
        n = min(step, n_logs * per_log - start)
        chunk = simulate(
            data,
            policy=DeterministicPolicy(data.X[:, 0]),
            click_model=model,
            n_sessions=n,
            first_session=start,
            top_k=top_k,
            interventions=interventions,
            seed=seed,
        )
        frames.append(by(chunk.with_columns(rep=(pl.col("session") // per_log).cast(pl.Int64))))
    return pl.concat(frames).partition_by("rep", as_dict=True)


def _pairs_by(chunk: pl.DataFrame) -> pl.DataFrame:
    iv = pl.col("intervention").cast(pl.String)
    return (
        chunk.group_by("rep", "intervention", "swap_pivot", "swap_k", "position")
        .agg(n=pl.len().cast(pl.Float64), c=pl.col("click").sum().cast(pl.Float64))
        .with_columns(
            kind=iv.replace_strict(
                {"none": 0, "swap": 1, "randpair": 2}, default=-1, return_dtype=pl.Int8
            ),
            a=pl.col("swap_pivot").cast(pl.Int64),
            b=pl.col("swap_k").cast(pl.Int64),
            position=pl.col("position").cast(pl.Int64),
        )
        .sort("rep", "kind", "a", "b", "position")
    )


def _rand_by(chunk: pl.DataFrame) -> pl.DataFrame:
    first = chunk.filter(pl.col("position") == 1).select(
        "session", c1=pl.col("click").cast(pl.Float64)
    )
    return (
        chunk.join(first, on="session")
        .group_by("rep", "position")
        .agg(
            n=pl.len().cast(pl.Float64),
            c=pl.col("click").sum().cast(pl.Float64),
            cc=(pl.col("click").cast(pl.Float64) * pl.col("c1")).sum(),
            n1p=pl.len().cast(pl.Float64),
        )
        .with_columns(position=pl.col("position").cast(pl.Int64))
        .sort("rep", "position")
    )


COVERAGE_CELLS = (
    "swap-0.5", "swap-1", "swap-2", "randpair", "randomized",
    "harvest-pivot", "harvest-adjacent", "harvest-allpairs", "em", "regression-em",
    "regression-em-redrawn",
)  # fmt: skip


def _hits(ci: np.ndarray, truth: np.ndarray) -> np.ndarray:
    return np.nan_to_num((ci[:, 0] <= truth) & (truth <= ci[:, 1])).astype(float)


def bench_coverage(
    n_logs: int = 1000,
    per_log: int = 2000,
    *,
    cells: tuple[str, ...] = COVERAGE_CELLS,
    harvest_sessions: int = 20_000,
    em_logs: int | None = None,
    em_boot: int = 100,
    rem_logs: int = 200,
    rem_boot: int = 0,
    rem_queries: int = 300,
    rem_first: int = 0,
    out: str | None = None,
) -> dict:
    """Share of ``n_logs`` independent logs whose 95% interval covers the true θ, per position.

    Swap (Swap(0.5), per eta), randpair (RandPair(0.8)) and randomized (Randomize(1.0),
    ``per_log / 2`` sessions) logs have ``per_log`` sessions over ``synthetic(300, 20)``
    with a deterministic logger; harvesting and EM logs have ``harvest_sessions`` sessions
    over ``synthetic(30, 10)`` from three deterministic rankers (one cell statistics per
    log, the three harvest estimators on it; EM with ``em_boot`` bootstrap replicates
    on the first ``em_logs`` of them). Regression-EM logs (``rem_logs``) have
    ``harvest_sessions`` sessions over ``synthetic(300, 20)`` from one deterministic
    production ranker (no document at two positions), with the sandwich intervals of the
    orthogonal correction (``rem_boot`` > 0: that many query-bootstrap replicates each);
    the redrawn cell draws ``synthetic(rem_queries, 20)`` for every log, with
    ``harvest_sessions`` per 300 queries, and reports the bias of log θ̂ and the intervals'
    mean half-width besides the coverage (does the bias shrink as fast as the interval?).
    Regression-EM logs are numbered from ``rem_first`` (several processes can share one
    experiment; the JSON keeps every log's hits, errors and half-widths to pool them).
    A log whose estimator fails counts as a miss everywhere. With
    ``out`` the results are written to that JSON after every cell.
    """
    data = _data()
    results: dict = {"n_logs": n_logs, "per_log": per_log, "harvest_sessions": harvest_sessions,
                     "cells": {}}  # fmt: skip

    def report(name, hits, n, sessions):
        cov = hits / max(n, 1)
        se = np.sqrt(0.95 * 0.05 / max(n, 1))
        print(
            f"[coverage] {name:<18} {n} logs x {sessions} sessions: "
            + " ".join(f"{c:.3f}" for c in cov[1:])
            + f"  (positions 2..{K}; nominal 0.95, SE {se:.3f})",
            flush=True,
        )
        results["cells"][name] = {"logs": n, "sessions": sessions, "coverage": cov.tolist(),
                                  "se": float(se)}  # fmt: skip
        if out:
            Path(out).write_text(json.dumps(results, indent=1) + "\n")

    def pair_cell(name, design, interventions, eta, seed):
        parts = _per_log_counts(data, n_logs, per_log, interventions=interventions, eta=eta,
                                top_k=K, seed=seed, by=_pairs_by)  # fmt: skip
        truth, hits = power_law(K, eta), np.zeros(K)
        for part in parts.values():
            st = {c: part[c].to_numpy() for c in ("kind", "a", "b", "position", "n", "c")}
            try:
                est = pair_from_counts(st, design=design, K=K)
            except Exception:  # an unidentified log counts as a miss everywhere
                continue
            hits += _hits(est.conf_int(0.05).select("lower", "upper").to_numpy(), truth)
        report(name, hits, len(parts), per_log)

    for eta in (0.5, 1.0, 2.0):
        if f"swap-{eta:g}" in cells:
            pair_cell(f"swap-{eta:g}", "swap", [Swap(0.5)], eta, 17)
    if "randpair" in cells:
        pair_cell("randpair", "randpair", [RandPair(0.8)], 1.0, 18)
    if "randomized" in cells:
        parts = _per_log_counts(data, n_logs, per_log // 2, interventions=[Randomize(1.0)],
                                eta=1.0, top_k=K, seed=19, by=_rand_by)  # fmt: skip
        truth, hits = power_law(K, 1.0), np.zeros(K)
        for part in parts.values():
            st = {c: part[c].to_numpy() for c in ("position", "n", "c", "cc", "n1p")}
            est = randomized_from_counts(st, K=K)
            hits += _hits(est.conf_int(0.05).select("lower", "upper").to_numpy(), truth)
        report("randomized", hits, len(parts), per_log // 2)

    harvest = [m for m in ("harvest-pivot", "harvest-adjacent", "harvest-allpairs") if m in cells]
    n_em = (n_logs if em_logs is None else em_logs) if "em" in cells else 0
    if harvest or n_em:
        small = synthetic(30, 10, seed=0)
        mix = MixturePolicy([DeterministicPolicy(small.X[:, j], name=f"r{j}") for j in range(3)])
        truth = power_law(K, 1.0)
        hits = {m: np.zeros(K) for m in harvest}
        em_hits = np.zeros(K)
        for r in range(max(n_logs if harvest else 0, n_em)):
            log = simulate(small, policy=mix, click_model=make_click_model("pbm", eta=1.0),
                           n_sessions=harvest_sessions, first_session=r * harvest_sessions,
                           seed=23)  # fmt: skip
            if r < n_logs and harvest:
                stats = cell_statistics(log.lazy())
                for m in harvest:
                    try:
                        est = harvest_from_cells(stats, estimator=m.split("-")[1], K=K)
                    except Exception:
                        continue
                    hits[m] += _hits(est.conf_int(0.05).select("lower", "upper").to_numpy(), truth)
            if r < n_em:
                try:
                    est = em(log, K=K, n_boot=em_boot, seed=r)
                    em_hits += _hits(est.conf_int(0.05).select("lower", "upper").to_numpy(), truth)
                except Exception:
                    pass
            if (r + 1) % 100 == 0 or r + 1 == n_logs:
                for m, h in hits.items():
                    if r < n_logs:
                        report(m, h, r + 1, harvest_sessions)
                if r < n_em:
                    report("em", em_hits, r + 1, harvest_sessions)
        for m, h in hits.items():
            report(m, h, n_logs, harvest_sessions)
        if n_em:
            report("em", em_hits, n_em, harvest_sessions)
    rem = [c for c in ("regression-em", "regression-em-redrawn") if c in cells]
    if rem:
        from clickrank.policies.production import production_ranker
        from clickrank.propensity import regression_em

        pbm = make_click_model("pbm", eta=1.0)
        fixed = DeterministicPolicy(production_ranker(data, 0.05, seed=0))
        redrawn_sessions = harvest_sessions * int(rem_queries) // 300

        def rem_log(cell, r):
            """(data, log) of log ``r``: the shared data and ranker, or its own."""
            if cell == "regression-em":
                first = r * harvest_sessions
                return data, simulate(data, policy=fixed, click_model=pbm, top_k=K, seed=29,
                                      n_sessions=harvest_sessions, first_session=first)  # fmt: skip
            own = synthetic(rem_queries, 20, seed=1000 + r)
            policy = DeterministicPolicy(production_ranker(own, 0.05, seed=r))
            return own, simulate(own, policy=policy, click_model=pbm, top_k=K, seed=r,
                                 n_sessions=redrawn_sessions)  # fmt: skip

        truth = power_law(K, 1.0)
        for cell in rem:
            hits, errors, halves, each = np.zeros(K), [], [], []
            sessions = harvest_sessions if cell == "regression-em" else redrawn_sessions
            for i, r in enumerate(range(int(rem_first), int(rem_first) + rem_logs)):
                own, log = rem_log(cell, r)
                try:
                    est = regression_em(log, own, n_boot=rem_boot, seed=r)
                    ci = est.conf_int(0.05).select("lower", "upper").to_numpy()
                    hit = _hits(ci, truth)
                    hits += hit
                    errors.append(np.log(est.theta) - np.log(truth))
                    halves.append((np.log(ci[:, 1]) - np.log(ci[:, 0])) / 2)
                    sens = None if est.sensitivity is None else est.sensitivity.tolist()
                    each.append({"log": r, "hit": hit.tolist(), "error": errors[-1].tolist(),
                                 "half_width": halves[-1].tolist(), "se": est.se.tolist(),
                                 "sensitivity": sens})  # fmt: skip
                except Exception:
                    each.append({"log": r, "failed": True})
                if (i + 1) % 20 == 0 or i + 1 == rem_logs:
                    report(cell, hits, i + 1, sessions)
                    results["cells"][cell]["each_log"] = each
            if errors:  # the bias against the interval: coverage falls where it outgrows it
                e, h = np.array(errors)[:, 1:], np.array(halves)[:, 1:]
                queries = 300 if cell == "regression-em" else int(rem_queries)
                print(f"[coverage] {cell:<18} {queries} queries: bias of log theta "
                      + " ".join(f"{v:+.3f}" for v in e.mean(axis=0))
                      + "; interval half-width " + " ".join(f"{v:.3f}" for v in h.mean(axis=0))
                      + f"  (positions 2..{K}, {len(e)} logs)", flush=True)  # fmt: skip
                results["cells"][cell].update(queries=queries, bias=e.mean(axis=0).tolist(),
                                              half_width=h.mean(axis=0).tolist(),
                                              first_log=int(rem_first))  # fmt: skip
                if out:
                    Path(out).write_text(json.dumps(results, indent=1) + "\n")
    return results


def _lightgbm_fit(params: dict, X, y, groups) -> None:
    import lightgbm as lgb

    lgb.train(params, lgb.Dataset(X, y, group=groups), 100)


def bench_cost(repeats: int = 3) -> dict:
    """Seconds of ``regression_em(n_boot=0)`` (with its orthogonal correction and its
    intervals' second smoothing; without that smoothing, ``sensitivity=0``, what
    ClickRanker runs; without the correction, ``correction="none"``) and of LightGBM
    lambdarank (100 trees, 8 leaves) on the same training documents, and their ratios (best
    of ``repeats``)."""
    from clickrank.datasets import load_letor
    from clickrank.policies.production import production_ranker
    from clickrank.propensity import regression_em

    sets = {"synthetic(1000, 20)": synthetic(1000, 20, seed=0)}
    mq = _shared_mq2008()
    if mq is not None:
        sets["MQ2008 Fold1"] = load_letor(mq)
    out = {}
    for name, data in sets.items():
        log = simulate(data, policy=DeterministicPolicy(production_ranker(data, 0.05, seed=0)),
                       click_model="pbm", n_sessions=20_000, top_k=K, seed=1)  # fmt: skip
        params = {"objective": "lambdarank", "num_leaves": 8, "max_depth": 3, "verbose": -1,
                  "num_threads": 1, "deterministic": True, "force_row_wise": True}  # fmt: skip
        label = np.minimum(np.asarray(data.y), 30).astype(int)
        runs = {
            "lightgbm": partial(_lightgbm_fit, params, data.X, label, np.diff(data.qptr)),
            "regression-em": partial(regression_em, log, data, n_boot=0),
            "no-sensitivity": partial(regression_em, log, data, n_boot=0, sensitivity=0),
            "no-correction": partial(regression_em, log, data, n_boot=0, correction="none"),
        }
        times = {}
        for what, fn in runs.items():
            best = float("inf")
            for _ in range(repeats):
                t = time.perf_counter()
                fn()
                best = min(best, time.perf_counter() - t)
            times[what] = best
        out[name] = {**times, "ratio": times["regression-em"] / times["lightgbm"],
                     "ratio_no_correction": times["no-correction"] / times["lightgbm"],
                     "ratio_no_sensitivity": times["no-sensitivity"] / times["lightgbm"],
                     "docs": data.n_docs}  # fmt: skip
        print(f"[cost] {name} ({data.n_docs:,} documents): regression EM "
              f"{times['regression-em']:.2f} s ({times['no-sensitivity']:.2f} s without its "
              f"intervals' second smoothing, {times['no-correction']:.2f} s without its "
              f"correction), LightGBM lambdarank 100 trees {times['lightgbm']:.2f} s: "
              f"{out[name]['ratio']:.2f}x ({out[name]['ratio_no_sensitivity']:.2f}x, "
              f"{out[name]['ratio_no_correction']:.2f}x)",
              flush=True)  # fmt: skip
    return out


def bench_rem_bias(n_synthetic: int = 12, n_mq: int = 6, sessions: int = 20_000) -> dict:
    """Regression EM with and without its orthogonal correction on the same logs of one
    deterministic production ranker (trained on 5 % of the queries, PBM θ_p = 1/p): bias
    and SD of log θ̂ per position, the mean absolute error over positions 2..K and the
    seconds of one estimate. ``synthetic(300, 20)`` (graded relevance, the coverage cell's
    logs) and MQ2008 Fold1 (binarized relevance, a ranker per log) when the shared data
    is there."""
    from clickrank.clickmodels import relevance_for_labels
    from clickrank.datasets import load_letor
    from clickrank.policies.production import production_ranker
    from clickrank.propensity import regression_em

    truth = np.log(power_law(K, 1.0))
    sets = {"synthetic(300, 20)": (_data(), make_click_model("pbm", eta=1.0), n_synthetic, False)}
    mq = _shared_mq2008()
    if mq is not None:
        data = load_letor(mq)
        params, _ = relevance_for_labels("pbm", data.y, relevance="binarized", eps=0.1)
        sets["MQ2008 Fold1"] = (data, make_click_model("pbm", eta=1.0, **params), n_mq, True)
    out = {}
    for name, (data, cm, n_logs, ranker_per_log) in sets.items():
        errors = {"none": [], "orthogonal": []}
        seconds = {"none": 0.0, "orthogonal": 0.0}
        for r in range(n_logs):
            ranker = production_ranker(data, 0.05, seed=r if ranker_per_log else 0)
            log = simulate(data, policy=DeterministicPolicy(ranker), click_model=cm,
                           n_sessions=sessions, first_session=r * sessions, top_k=K,
                           seed=29)  # fmt: skip
            for correction, errs in errors.items():
                t = time.perf_counter()
                est = regression_em(log, data, seed=r, correction=correction)
                seconds[correction] += time.perf_counter() - t
                errs.append(np.log(est.theta) - truth)
        out[name] = {}
        for correction, errs in errors.items():
            e = np.array(errs)[:, 1:]
            out[name][correction] = {"bias": e.mean(0).tolist(), "sd": e.std(0, ddof=1).tolist(),
                                     "mean_abs_error": float(np.abs(e).mean()),
                                     "seconds": seconds[correction] / n_logs}  # fmt: skip
            print(f"[rem-bias] {name}, {n_logs} logs, correction={correction}: mean |error of "
                  f"log theta| {np.abs(e).mean():.3f}; bias at positions 2..{K} "
                  + " ".join(f"{b:+.3f}" for b in e.mean(0))
                  + f"; {seconds[correction] / n_logs:.2f} s an estimate", flush=True)  # fmt: skip
    return out


def _shared_mq2008() -> Path | None:
    root = Path(os.environ.get("CLICKRANK_SHARED_DATA", Path(__file__).resolve().parents[2]
                               / "shared" / "data"))  # fmt: skip
    mq = root / "letor4_mq2008" / "Fold1" / "train.txt"
    return mq if mq.is_file() else None


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--parts",
        nargs="+",
        default=["baseline", "scale", "scale-all", "coverage"],
        choices=["baseline", "scale", "scale-all", "coverage", "cost", "rem-bias"],
    )
    ap.add_argument("--sessions", type=int, default=10_000_000, help="sessions for 'scale'")
    ap.add_argument("--logs", type=int, default=1000, help="logs per coverage experiment")
    ap.add_argument("--cells", nargs="+", default=list(COVERAGE_CELLS), choices=COVERAGE_CELLS)
    ap.add_argument("--harvest-sessions", type=int, default=20_000)
    ap.add_argument("--em-logs", type=int, default=None, help="logs for the EM cell")
    ap.add_argument("--rem-logs", type=int, default=200, help="logs for the regression-EM cell")
    ap.add_argument("--rem-boot", type=int, default=0,
                    help="query-bootstrap replicates of each regression-EM log (0: its "
                         "sandwich intervals)")  # fmt: skip
    ap.add_argument(
        "--rem-queries",
        type=int,
        default=300,
        help="queries of each redrawn regression-EM log (sessions scale with them)",
    )
    ap.add_argument("--rem-first", type=int, default=0,
                    help="number of the first regression-EM log (to split an experiment "
                         "between processes)")  # fmt: skip
    ap.add_argument("--json", default=None, help="coverage results, rewritten after every cell")
    ap.add_argument("--tmp", default=None, help="folder for the temporary parquet log")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--method", default="randomized", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _estimate_child(args.child, args.method)
        return
    print(f"cpus: {os.cpu_count()}, polars {pl.__version__}")
    if "baseline" in args.parts:
        bench_baseline()
    if "scale" in args.parts:
        bench_scale(args.sessions, args.tmp)
    if "scale-all" in args.parts:
        bench_scale_all(args.sessions, args.tmp)
    if "cost" in args.parts:
        bench_cost()
    if "rem-bias" in args.parts:
        bench_rem_bias()
    if "coverage" in args.parts:
        bench_coverage(args.logs, cells=tuple(args.cells), harvest_sessions=args.harvest_sessions,
                       em_logs=args.em_logs, rem_logs=args.rem_logs, rem_boot=args.rem_boot,
                       rem_queries=args.rem_queries, rem_first=args.rem_first,
                       out=args.json)  # fmt: skip


if __name__ == "__main__":
    main()
