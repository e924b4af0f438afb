"""Interleaving benchmarks: speed, power (interleaving vs A/B) and fidelity.

Run from the repository root:

    python benchmarks/bench_interleaving.py                 # speed (team-draft + PBM)
    python benchmarks/bench_interleaving.py --power         # power curves, docs/figures PNG
    python benchmarks/bench_interleaving.py --power --population web      # heterogeneous users
    python benchmarks/bench_interleaving.py --power --population compare  # all populations
    python benchmarks/bench_interleaving.py --power --population web --sessions-per-user 1 10 50
    python benchmarks/bench_interleaving.py --fidelity      # agreement with offline NDCG@10
    python benchmarks/bench_interleaving.py --fidelity --rankers lambdamart  # trained models

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


POPULATIONS = ("homogeneous", "pbm-spread", "web")


def population_model(population, click_model):
    """The click model of a user population.

    homogeneous  every session follows ``click_model`` (default PBM, eta = 1)
    pbm-spread   PBMs with log-normal eta (median 1, SD of log eta 0.75, 7 types) crossed
                 with click noise eps in {0.05, 0.1, 0.3}: continuous heterogeneity
    web          navigational / economic / exhaustive / low-engagement users
                 (clickrank.clickmodels.web_search_population, shares from Broder (2002),
                 Aula et al. (2005), Dumais et al. (2010))
    """
    from clickrank.clickmodels import make_click_model, pbm_population, web_search_population

    if population == "homogeneous":
        return make_click_model(click_model)
    if population == "pbm-spread":
        return pbm_population(1.0, 0.75, 7, noise=(0.05, 0.1, 0.3))
    return web_search_population()


def bench_power(
    pool, experiments, plot, sigma_b, click_model, population="homogeneous", sessions_per_user=(1,)
):
    data = synthetic(1000, 30, seed=0)
    a, b = rankers(data, 1.0, sigma_b, seed=3)
    pops = POPULATIONS if population == "compare" else (population,)
    curves = {}
    for pop in pops:
        for spu in sessions_per_user:
            model = population_model(pop, click_model)
            t0 = time.perf_counter()
            pc = power_analysis(
                data,
                a,
                b,
                pool_size=pool,
                n_experiments=experiments,
                seed=1,
                click_model=model,
                sessions_per_user=spu,
            )
            label = f"{pop} users" if spu == 1 else f"{pop} users, {spu} sessions each"
            curves[label] = pc
            print(f"== population: {label} ==")
            print(pc.summary())
            print(pc.to_frame())
            print(f"({time.perf_counter() - t0:.0f} s)")
    print("\nimpressions for 80% power; ratio = best A/B metric / each interleaving method")
    for label, pc in curves.items():
        need = pc.n_for_power(0.8)
        ab = {k: v for k, v in need.items() if k.startswith("A/B")}
        best_ab = min(ab, key=ab.get)
        row = ", ".join(
            f"{m} {need[m]:,.0f} ({ab[best_ab] / need[m]:.2f}x)"
            for m in need
            if not m.startswith("A/B")
        )
        print(f"  {label:<32} best A/B = {best_ab} ({ab[best_ab]:,.0f}); {row}")
    if plot:
        name = click_model if population == "homogeneous" else population
        spus = (
            ""
            if tuple(sessions_per_user) == (1,)
            else "_spu" + "-".join(map(str, sessions_per_user))
        )
        out = ROOT / "docs" / "figures" / f"power_{name}{spus}_sigma{sigma_b:g}.png"
        if len(curves) == 1:
            next(iter(curves.values())).plot(out)
        else:
            import matplotlib

            matplotlib.use("Agg", force=False)
            import matplotlib.pyplot as plt

            fig, axes = plt.subplots(1, len(curves), figsize=(5.2 * len(curves), 4.2), sharey=True)
            for ax, (label, pc) in zip(axes, curves.items(), strict=True):
                pc.plot(ax=ax)
                ax.set_title(f"{label}; NDCG@10 {pc.ndcg_a:.3f} vs {pc.ndcg_b:.3f}", fontsize=9)
                if ax is not axes[0]:
                    ax.set_ylabel("")
            fig.tight_layout()
            fig.savefig(out, dpi=80)
        print(f"wrote {out.relative_to(ROOT)} ({os.path.getsize(out) / 1024:.0f} KiB)")


def bench_fidelity(pairs, impressions, noise):
    data = synthetic(1000, 30, seed=0)
    t0 = time.perf_counter()
    for method in ("team-draft", "probabilistic"):
        res = fidelity_study(
            data, n_pairs=pairs, n_impressions=impressions, method=method, noise=noise, seed=2
        )
        print(res.summary())
    d = res.table["diff"].abs()
    print(f"  |ΔNDCG@10| over pairs: median {d.median():.4f}, max {d.max():.4f}")
    print(f"({time.perf_counter() - t0:.0f} s)")


def lambdamart_rankers(seed=0):
    """LambdaMART models of graded quality, trained on queries disjoint from the test set.

    Grid: trees {1, 3, 10, 30, 100} x training queries {30, 100, 1000} x label noise
    {0, 0.5} (that fraction of training labels replaced by a uniform random grade 0..4)
    = 30 models. Training data: ``synthetic(1000, 30, seed=1)``; test: seed 0.
    """
    from clickrank.datasets import split_queries
    from clickrank.lambdamart import LambdaMART

    pool = synthetic(1000, 30, seed=1)
    rng = np.random.default_rng(seed)
    models, names = [], []
    for nq in (30, 100, 1000):
        train = pool if nq == pool.n_queries else split_queries(pool, [nq], seed=seed)[0]
        for flip in (0.0, 0.5):
            y = train.y.copy()
            hit = rng.random(y.size) < flip
            y[hit] = rng.integers(0, 5, int(hit.sum()))
            noisy = train.with_labels(y)
            for trees in (1, 3, 10, 30, 100):
                models.append(LambdaMART(n_estimators=trees, seed=seed).fit(noisy))
                names.append(f"T{trees}/Q{nq}/flip{flip:g}")
    return models, names


def bench_fidelity_lambdamart(impressions, population, click_model, plot):
    from clickrank.metrics import ndcg

    test = synthetic(1000, 30, seed=0)
    t0 = time.perf_counter()
    models, names = lambdamart_rankers()
    nd = np.array([float(ndcg(m.predict(test), test.y, test.qptr, k=10)) for m in models])
    print(
        f"trained {len(models)} LambdaMART models in {time.perf_counter() - t0:.0f} s; "
        f"test NDCG@10 from {nd.min():.3f} to {nd.max():.3f} (median {np.median(nd):.3f})"
    )
    model = population_model(population, click_model)
    results = {}
    for method in ("team-draft", "probabilistic"):
        t1 = time.perf_counter()
        res = fidelity_study(
            test,
            rankers=models,
            n_pairs=10_000,
            method=method,
            n_impressions=impressions,
            click_model=model,
            seed=2,
        )
        results[method] = res
        print(res.summary())
        tab = res.table.with_columns(ad=res.table["diff"].abs())
        for lo, hi in ((0.0, 0.01), (0.01, 0.02), (0.02, 0.05), (0.05, 1.0)):
            b = tab.filter((tab["ad"] >= lo) & (tab["ad"] < hi))
            sig = b.filter(b["p_value"] < res.alpha)
            print(
                f"    |dNDCG| in [{lo:.2f}, {hi:.2f}): {b.height:4d} pairs, agreement "
                f"{b['agree'].mean() if b.height else float('nan'):.3f}, significant "
                f"{sig.height / max(b.height, 1):.3f}, of those agreeing "
                f"{sig['agree'].mean() if sig.height else float('nan'):.3f} (NDCG), "
                f"{sig['agree_clicks'].mean() if sig.height else float('nan'):.3f} "
                "(expected clicks)"
            )
        print(f"  ({time.perf_counter() - t1:.0f} s)")
    if plot:
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=False)
        for ax, (method, res) in zip(axes, results.items(), strict=True):
            t = res.table
            ok = t["agree"].to_numpy() > 0
            d, dl = t["diff"].to_numpy(), t["delta"].to_numpy()
            ax.scatter(d[ok], dl[ok], s=6, c="tab:blue", label="agrees")
            ax.scatter(d[~ok], dl[~ok], s=14, c="tab:red", marker="x", label="disagrees")
            ax.axhline(0, color="grey", lw=0.6)
            for x in (-0.01, 0.01):
                ax.axvline(x, color="grey", lw=0.6, ls=":")
            ax.set_xlabel("offline NDCG@10 difference (A − B)")
            ax.set_ylabel("interleaving Δ")
            ax.set_title(f"{method}: agreement {res.agreement:.3f} (|ΔNDCG| ≥ 0.01)", fontsize=9)
            ax.legend(fontsize=8)
            ax.grid(alpha=0.3)
        fig.suptitle(
            f"{len(models)} LambdaMART models, all pairs, {impressions:,} "
            f"impressions/pair, {population} users",
            fontsize=9,
        )
        fig.tight_layout()
        out = ROOT / "docs" / "figures" / f"fidelity_lambdamart_{population}.png"
        fig.savefig(out, dpi=80)
        print(f"wrote {out.relative_to(ROOT)} ({os.path.getsize(out) / 1024:.0f} KiB)")
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
    ap.add_argument(
        "--click-model", default="pbm", help="click model of the homogeneous population"
    )
    ap.add_argument(
        "--population",
        default="homogeneous",
        choices=(*POPULATIONS, "compare"),
        help="user population for --power (compare = all three, one figure)",
    )
    ap.add_argument("--fidelity", action="store_true")
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--pair-impressions", type=int, default=20_000)
    ap.add_argument(
        "--noise",
        type=float,
        nargs=2,
        default=(0.5, 3.0),
        help="range of the rankers' noise SD (narrow range -> close pairs)",
    )
    ap.add_argument(
        "--sessions-per-user",
        type=int,
        nargs="+",
        default=[1],
        help="impressions per user for --power (> 1: users keep their type and are "
        "the unit of randomization); several values -> one panel each",
    )
    ap.add_argument(
        "--rankers",
        default="noise",
        choices=("noise", "lambdamart"),
        help="fidelity pairs: labels + noise, or 30 trained LambdaMART models",
    )
    args = ap.parse_args()
    if args.power:
        bench_power(
            args.pool,
            args.experiments,
            not args.no_plot,
            args.sigma_b,
            args.click_model,
            args.population,
            tuple(args.sessions_per_user),
        )
    elif args.fidelity and args.rankers == "lambdamart":
        pop = "homogeneous" if args.population == "compare" else args.population
        bench_fidelity_lambdamart(args.pair_impressions, pop, args.click_model, not args.no_plot)
    elif args.fidelity:
        bench_fidelity(args.pairs, args.pair_impressions, tuple(args.noise))
    else:
        bench_speed(args.impressions)
