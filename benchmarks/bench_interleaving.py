"""Interleaving benchmarks: speed, power (interleaving vs A/B) and fidelity.

Run from the repository root:

    python benchmarks/bench_interleaving.py                 # speed (team-draft + PBM)
    python benchmarks/bench_interleaving.py --power         # power curves, docs/figures PNG
    python benchmarks/bench_interleaving.py --fidelity      # agreement with offline NDCG@10

Speed is measured against a straightforward per-impression Python
implementation of team-draft with PBM clicks (the baseline) in the same
process; the ratio is printed. Data: the synthetic course-notes queries
(1,000 queries x 30 documents, labels 0..4), rankers = labels + Gaussian noise.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from clickrank.clickmodels import PBM
from clickrank.datasets import synthetic
from clickrank.online import fidelity_study, interleaving_experiment, power_analysis

ROOT = Path(__file__).resolve().parents[1]


def rankers(data, sigma_a, sigma_b, seed=0):
    rng = np.random.default_rng(seed)
    a = data.y + sigma_a * rng.standard_normal(data.n_docs)
    b = data.y + sigma_b * rng.standard_normal(data.n_docs)
    return a, b


def baseline_team_draft(data, a, b, n, seed=0, k=10):
    """Per-impression pure-Python team-draft + PBM clicks (the reference implementation)."""
    rng = np.random.default_rng(seed)
    model = PBM()
    theta = model.propensities(k)
    bounds = list(zip(data.qptr[:-1], data.qptr[1:], strict=True))
    lists_a = [list(np.argsort(-a[s:e], kind="stable")) for s, e in bounds]
    lists_b = [list(np.argsort(-b[s:e], kind="stable")) for s, e in bounds]
    eps, ymax = 0.1, 4.0
    wins = losses = 0
    for _ in range(n):
        q = int(rng.integers(data.n_queries))
        la, lb, shown, team = lists_a[q], lists_b[q], [], []
        used = set()
        ia = ib = na = nb = 0
        while len(shown) < k:
            while ia < len(la) and la[ia] in used:
                ia += 1
            while ib < len(lb) and lb[ib] in used:
                ib += 1
            if ia >= len(la) and ib >= len(lb):
                break
            pick_a = na < nb or (na == nb and rng.random() < 0.5)
            if (pick_a and ia < len(la)) or ib >= len(lb):
                d, na = la[ia], na + 1
                team.append(0)
            else:
                d, nb = lb[ib], nb + 1
                team.append(1)
            shown.append(d)
            used.add(d)
        ca = cb = 0
        for j, d in enumerate(shown):
            y = data.y[data.qptr[q] + d]
            p = theta[j] * (eps + (1 - eps) * (2**y - 1) / (2**ymax - 1))
            if rng.random() < p:
                ca, cb = ca + (team[j] == 0), cb + (team[j] == 1)
        wins, losses = wins + (ca > cb), losses + (cb > ca)
    return wins, losses


def bench_speed(n):
    data = synthetic(1000, 30, seed=0)
    a, b = rankers(data, 1.0, 1.3)
    interleaving_experiment(data, a, b, n_impressions=2000, seed=1)  # numba compile
    t0 = time.perf_counter()
    r = interleaving_experiment(data, a, b, n_impressions=n, seed=1)
    t = time.perf_counter() - t0
    n_base = 20_000
    t0 = time.perf_counter()
    baseline_team_draft(data, a, b, n_base)
    tb = (time.perf_counter() - t0) / n_base
    print(f"team-draft + PBM clicks, {n:,} impressions (1,000 queries x 30 docs, k = 10):")
    print(f"  clickrank  {t:7.2f} s   {n / t * 60:14,.0f} impressions/min (1 process)")
    print(
        f"  baseline   {tb * n:7.2f} s   {60 / tb:14,.0f} impressions/min "
        f"(pure Python per impression, timed on {n_base:,})"
    )
    print(f"  speed-up   {tb * n / t:.0f}x   (result: {r.wins} wins, {r.losses} losses)")
    for method in ("balanced", "probabilistic", "optimized"):
        m = 200_000
        interleaving_experiment(
            data.subset(np.arange(5)), a[:150], b[:150], method=method, n_impressions=100, seed=0
        )
        t0 = time.perf_counter()
        interleaving_experiment(data, a, b, method=method, n_impressions=m, seed=1)
        t = time.perf_counter() - t0
        extra = " (includes solving 1,000 LPs)" if method == "optimized" else ""
        print(f"  {method:<13} {m / t * 60:14,.0f} impressions/min{extra}")


def bench_power(pool, experiments, plot, sigma_b, click_model):
    from clickrank.clickmodels import make_click_model

    data = synthetic(1000, 30, seed=0)
    a, b = rankers(data, 1.0, sigma_b, seed=3)
    model = make_click_model(click_model)
    t0 = time.perf_counter()
    pc = power_analysis(
        data, a, b, pool_size=pool, n_experiments=experiments, seed=1, click_model=model
    )
    print(pc.summary())
    print(pc.to_frame())
    print(f"({time.perf_counter() - t0:.0f} s)")
    if plot:
        out = ROOT / "docs" / "figures" / f"power_{click_model}_sigma{sigma_b:g}.png"
        pc.plot(out)
        print(f"wrote {out.relative_to(ROOT)} ({os.path.getsize(out) / 1024:.0f} KiB)")


def bench_fidelity(pairs, impressions, noise):
    data = synthetic(1000, 30, seed=0)
    t0 = time.perf_counter()
    for method in ("team-draft", "probabilistic"):
        res = fidelity_study(data, n_pairs=pairs, n_impressions=impressions, method=method,
                             noise=noise, seed=2)
        print(res.summary())
    d = res.table["diff"].abs()
    print(f"  |ΔNDCG@10| over pairs: median {d.median():.4f}, max {d.max():.4f}")
    print(f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--impressions", type=int, default=1_000_000)
    ap.add_argument("--power", action="store_true")
    ap.add_argument("--pool", type=int, default=300_000)
    ap.add_argument("--experiments", type=int, default=2000)
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument(
        "--sigma-b",
        type=float,
        default=1.1,
        help="noise of ranker B (A has 1.0); 1.1 -> NDCG@10 differs by ~2 points",
    )
    ap.add_argument("--click-model", default="pbm")
    ap.add_argument("--fidelity", action="store_true")
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--pair-impressions", type=int, default=20_000)
    ap.add_argument("--noise", type=float, nargs=2, default=(0.5, 3.0),
                    help="range of the rankers' noise SD (narrow range -> close pairs)")
    args = ap.parse_args()
    if args.power:
        bench_power(args.pool, args.experiments, not args.no_plot, args.sigma_b, args.click_model)
    elif args.fidelity:
        bench_fidelity(args.pairs, args.pair_impressions, tuple(args.noise))
    else:
        bench_speed(args.impressions)
