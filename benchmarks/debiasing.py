"""Debiasing benchmark: which training target recovers the oracle ranker from biased clicks?

Run: ``python benchmarks/debiasing.py [--seeds 3] [--sessions 1000000] [--quick]
[--no-baselines] [--fairpairs 0.1,0.3,1.0]``

Setup (Joachims et al. (2017), §6, on the DESIGN §4
synthetic data): per seed, synthetic(6000, 30) split 5,000 train / 1,000 test
queries; a production ranker trained on 1 % of the training queries shows its
top 10; clicks follow a PBM with theta_p = 1/p (eta = 1) and binarized relevance
(labels >= 3 relevant, clicked w.p. 1 when examined; irrelevant w.p. 0.1);
``--sessions`` sessions. Every learner gets the same log and grows the same
trees (100 trees, 31 leaves, learning rate 0.1); test NDCG@10 on true labels
(queries without a relevant document skipped).

Rows:
  production          the logging ranker itself
  naive               clickrank LambdaMART on click counts (shown candidates)
  ips (true theta)    clickrank LambdaMART on IPS gains, shown candidates
  ips, all docs       the same gains with never-shown documents as gain 0
  skip-above          clickrank LambdaMART on skip-above preferences (RankNet)
  last-click-skip-above, skip-previous, skip-next, skip-above+skip-next
                      the other click-preference strategies of Joachims et al.
                      (2005, 2007) (targets.click_preferences), same log
  skip-above, uniform skip-above on a log of the same size from a uniformly random
                      logging policy (no presentation order to reverse)
  fairpairs f%        FairPairs preferences (Radlinski & Joachims (2006)) from a log in
                      which a fraction f of the sessions got the FairPairs intervention
                      (same sessions, queries and production lists otherwise)
  lightgbm position   LightGBM lambdarank on session lists (binary clicks) with the
                      ``position`` field (position-bias factors, LightGBM >= 4.1)
  xgboost unbiased    XGBoost rank:ndcg with lambdarank_unbiased=True on session
                      lists (position = row order)
  oracle              clickrank LambdaMART on the true labels (skyline)

Session-level baselines train on every session with at least one click (sessions
without a click produce no pairs, hence no gradient, in both libraries).
The table gives the mean over seeds with a 95 % t interval, for NDCG@10 with the
graded labels and with binary relevance (label >= 3, the only distinction the
simulated clicks carry).
"""

from __future__ import annotations

import argparse
import time

import _baselines
import numpy as np
from scipy import stats

from clickrank.clickmodels import make_click_model
from clickrank.datasets import split_queries, synthetic
from clickrank.lambdamart import LambdaMART
from clickrank.metrics import ndcg
from clickrank.policies import DeterministicPolicy, UniformRandom
from clickrank.policies.production import production_ranker
from clickrank.propensity import estimate_propensities
from clickrank.simulation import FairPairs, Swap, simulate
from clickrank.targets import (
    click_preferences,
    fair_pairs,
    ips,
    label_agreement,
    naive,
    oracle,
    skip_above,
)

STRATEGIES = ("last-click-skip-above", "skip-previous", "skip-next", "skip-above+skip-next")

TREES = {
    "n_estimators": 100,
    "learning_rate": 0.1,
    "num_leaves": 31,
    "min_data_in_leaf": 20,
    "max_depth": -1,
}


def lightgbm_position(train, log, seed: int, threads: int, reg: float):
    return _baselines.lightgbm_position(train, log, TREES, seed=seed, threads=threads, reg=reg)


def xgboost_unbiased(train, log, seed: int, threads: int):
    return _baselines.xgboost_unbiased(train, log, TREES, seed=seed, threads=threads)


def one_seed(
    seed: int, n_sessions: int, threads: int, reg: float, baselines: bool, fairpairs: list[float]
) -> dict:
    train, test = split_queries(synthetic(6000, 30, seed=seed), [5000, 1000], seed=seed)
    prod = production_ranker(train, 0.01, seed=seed)
    click_model = make_click_model(
        "pbm", eta=1.0, attractiveness={"kind": "binarized", "threshold": 3, "eps_minus": 0.1}
    )
    sim = dict(click_model=click_model, n_sessions=n_sessions, top_k=10, seed=seed)
    production = DeterministicPolicy(prod, name="production")
    log = simulate(train, policy=production, **sim)
    theta = click_model.propensities(10)
    # Estimated propensities come from a separate, smaller intervention experiment
    # (half of 10 % as many sessions swap rank 1 with a uniform rank k; other seed).
    swap_log = simulate(
        train,
        policy=production,
        interventions=Swap(0.5),
        **{**sim, "n_sessions": max(n_sessions // 10, 10_000), "seed": seed + 7919},
    )
    theta_hat = estimate_propensities(swap_log, method="swap")

    binary = (test.y >= 3).astype(np.float64)  # the relevance the clicks carry

    def score(pred) -> tuple[float, float]:
        graded = float(ndcg(pred, test.y, test.qptr, k=10))
        return graded, float(ndcg(pred, binary, test.qptr, k=10))

    rng = np.random.default_rng(seed)
    out = {"random": score(rng.random(test.n_docs)), "production": score(prod.predict(test.X))}
    timing = {}
    targets = {
        "naive": lambda: naive(train, log),
        "ips (true theta)": lambda: ips(train, log, theta),
        "ips (swap-estimated theta)": lambda: ips(train, log, theta_hat),
        "ips, all docs": lambda: ips(train, log, theta, candidates="all"),
        "skip-above": lambda: skip_above(train, log),
        **{s: (lambda s=s: click_preferences(train, log, strategy=s)) for s in STRATEGIES},
        "skip-above, uniform": lambda: skip_above(
            train, simulate(train, policy=UniformRandom(), **sim)
        ),
        **{
            f"fairpairs {f:.0%}": (
                lambda f=f: fair_pairs(
                    train, simulate(train, policy=production, interventions=FairPairs(f), **sim)
                )
            )
            for f in fairpairs
        },
        "oracle": lambda: oracle(train),
    }
    agreement = {}
    for name, build in targets.items():
        target = build()
        t = time.perf_counter()
        model = LambdaMART(**TREES, seed=seed, n_jobs=threads).fit(train, target)
        timing[name] = time.perf_counter() - t
        out[name] = score(model.predict(test))
        if target.kind == "pairs":
            a = label_agreement(target, train.y)
            agreement[name] = (target.metadata["preferences"], a["accuracy"], a["tie"])
    if baselines:
        t = time.perf_counter()
        out["lightgbm position"] = score(lightgbm_position(train, log, seed, threads, reg)(test.X))
        timing["lightgbm position"] = time.perf_counter() - t
        t = time.perf_counter()
        out["xgboost unbiased"] = score(xgboost_unbiased(train, log, seed, threads)(test.X))
        timing["xgboost unbiased"] = time.perf_counter() - t
    clicks = int(log["click"].sum())
    print(f"seed {seed}: {n_sessions:,} sessions, {clicks:,} clicks; graded/binary NDCG@10: "
          + ", ".join(f"{k} {a:.4f}/{b:.4f}" for k, (a, b) in out.items()))  # fmt: skip
    print("   fit seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in timing.items()))
    print(
        "   preferences (count, accuracy on pairs of different labels, share of label ties): "
        + ", ".join(f"{k} {n:,} {acc:.3f} {tie:.3f}" for k, (n, acc, tie) in agreement.items())
    )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--sessions", type=int, default=1_000_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--position-reg", type=float, default=0.0,
                    help="LightGBM lambdarank_position_bias_regularization")  # fmt: skip
    ap.add_argument("--no-baselines", action="store_true", help="skip LightGBM/XGBoost rows")
    ap.add_argument("--quick", action="store_true", help="1 seed, 100,000 sessions")
    ap.add_argument(
        "--leaves", type=int, default=TREES["num_leaves"], help="leaves per tree, for every learner"
    )
    ap.add_argument(
        "--max-depth",
        type=int,
        default=TREES["max_depth"],
        help="tree depth limit, for every learner (-1: none)",
    )
    ap.add_argument("--fairpairs", default="0.1,0.3,1.0",
                    help="comma-separated FairPairs session fractions (one row each)")  # fmt: skip
    args = ap.parse_args()
    fractions = [float(f) for f in args.fairpairs.split(",") if f.strip()]
    if args.quick:
        args.seeds, args.sessions = 1, 100_000
    TREES.update(num_leaves=args.leaves, max_depth=args.max_depth)
    results = [
        one_seed(
            s, args.sessions, args.threads, args.position_reg, not args.no_baselines, fractions
        )
        for s in range(args.seeds)
    ]
    names = list(results[0])
    print(f"\nTest NDCG@10, mean over {args.seeds} seed(s) with 95% t interval")
    print("graded: labels 0..4, gain 2^y - 1; binary: relevant = label >= 3 (what clicks reveal)")
    print(f"| {'method':<21} | {'graded':>7} | {'95% CI':>17} | {'binary':>7} | {'95% CI':>17} |")
    print(f"|{'-' * 23}|{'-' * 9}|{'-' * 19}|{'-' * 9}|{'-' * 19}|")
    for name in names:
        cells = []
        for j in (0, 1):
            v = np.array([r[name][j] for r in results])
            if len(v) > 1:
                half = stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v))
                ci = f"[{v.mean() - half:.4f}, {v.mean() + half:.4f}]"
            else:
                ci = "(one seed)"
            cells.append(f"{v.mean():>7.4f} | {ci:>17}")
        print(f"| {name:<21} | {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
