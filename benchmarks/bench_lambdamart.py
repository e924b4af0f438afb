"""Benchmark: clickrank.LambdaMART (oracle target) against LightGBM's built-in lambdarank.

Run: ``python benchmarks/bench_lambdamart.py [--quick] [--threads N]``

(a) Quality and speed with true labels, same trees / leaves / learning rate /
    truncation / lambdarank_norm, on MQ2008 Fold1 (NDCG@10 on test) and on the
    DESIGN §4 synthetic data (synthetic(1300, 30), 300 train / 1,000 test
    queries, NDCG@5). Targets: |ΔNDCG| < 0.005 and time <= 1.5x LightGBM's.
(b) Training time against the number of documents (1e4..1e6, 30 per query)
    and against the documents per query (10..1000 at 1e5 documents).

Both libraries run in this process on the same thread count; every timing is
the best of ``--repeats`` runs after one warm-up (numba's compiled kernel is
cached on disk; its first load is reported separately).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import lightgbm as lgb
import numpy as np

from clickrank.datasets import load_letor, split_queries, synthetic
from clickrank.lambdamart import LambdaMART
from clickrank.lambdas import lambdas
from clickrank.metrics import ndcg


def _shared_data() -> Path:
    env = os.environ.get("CLICKRANK_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def _builtin_params(cfg: dict, threads: int) -> dict:
    return {
        "objective": "lambdarank",
        "learning_rate": cfg["learning_rate"],
        "num_leaves": cfg["num_leaves"],
        "max_depth": cfg["max_depth"],
        "min_data_in_leaf": cfg["min_data_in_leaf"],
        "lambdarank_truncation_level": cfg["truncation_level"],
        "lambdarank_norm": True,
        "seed": 0,
        "deterministic": True,
        "force_row_wise": True,
        "num_threads": threads,
        "verbosity": -1,
    }


def _best_time(fn, repeats: int) -> tuple[float, object]:
    out, best = None, np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def compare(name: str, train, test, cfg: dict, k: int, threads: int, repeats: int) -> dict:
    """Fit both on ``train``; NDCG@k on ``test`` and best-of-``repeats`` fit times."""
    ours_fn = lambda: LambdaMART(**cfg, seed=0, n_jobs=threads).fit(train)  # noqa: E731
    dset = lambda: lgb.Dataset(train.X, train.y, group=train.lengths)  # noqa: E731
    theirs_fn = lambda: lgb.train(_builtin_params(cfg, threads), dset(), cfg["n_estimators"])  # noqa: E731
    ours_fn()  # warm-up (loads the cached numba kernel)
    t_ours, model = _best_time(ours_fn, repeats)
    t_theirs, booster = _best_time(theirs_fn, repeats)
    a = float(ndcg(model.predict(test), test.y, test.qptr, k=k))
    b = float(ndcg(booster.predict(test.X), test.y, test.qptr, k=k))
    row = {
        "data": name,
        "ours": a,
        "lightgbm": b,
        "diff": a - b,
        "t_ours": t_ours,
        "t_lgb": t_theirs,
    }
    print(
        f"{name:<28} NDCG@{k}: ours {a:.4f}  lightgbm {b:.4f}  diff {a - b:+.4f} | "
        f"time ours {t_ours:.2f}s  lightgbm {t_theirs:.2f}s  ratio {t_ours / t_theirs:.2f}x"
    )
    return row


def scaling(threads: int, repeats: int, quick: bool) -> None:
    cfg = {"n_estimators": 20, "learning_rate": 0.1, "num_leaves": 31, "max_depth": -1,
           "min_data_in_leaf": 20, "truncation_level": 30}  # fmt: skip
    print(
        "\n(b) training time, 20 trees, 31 leaves, truncation 30"
        " (seconds; lambda/iter = our kernel alone)"
    )
    print(
        f"{'docs':>9} {'per query':>9} {'ours':>8} {'lightgbm':>9} {'ratio':>6} {'lambda/iter':>12}"
    )
    sizes = [(10_000, 30), (100_000, 30)] + ([] if quick else [(1_000_000, 30)])
    per_q = [(100_000, 10), (100_000, 100), (100_000, 1000)]
    for n_docs, m in sizes + per_q:
        data = synthetic(n_docs // m, m, seed=1)
        t_ours, _ = _best_time(lambda: LambdaMART(**cfg, n_jobs=threads).fit(data), repeats)  # noqa: B023
        dset = lambda: lgb.Dataset(data.X, data.y, group=data.lengths)  # noqa: B023, E731
        t_lgb, _ = _best_time(lambda: lgb.train(_builtin_params(cfg, threads), dset(), 20), repeats)  # noqa: B023
        s = np.random.default_rng(0).standard_normal(data.n_docs)
        g = np.exp2(data.y) - 1
        t_lam, _ = _best_time(lambda: lambdas(s, g, data.qptr, truncation=30, normalize=True), 3)  # noqa: B023
        print(
            f"{n_docs:>9,} {m:>9} {t_ours:>8.2f} {t_lgb:>9.2f} {t_ours / t_lgb:>5.2f}x"
            f" {t_lam:>11.4f}s"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="skip the 1e6-document run")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    t = time.perf_counter()
    lambdas(np.zeros(2), np.array([1.0, 0.0]), np.array([0, 2]))
    print(f"numba kernel load/compile: {time.perf_counter() - t:.2f}s (one-time per process)")
    print(f"lightgbm {lgb.__version__}, threads={args.threads}, best of {args.repeats} runs\n")
    print(
        "(a) oracle LambdaMART vs LightGBM lambdarank (same trees, leaves, lr, truncation 30, norm)"
    )

    train, test = split_queries(synthetic(1300, 30), [300, 1000])
    cfg = {"n_estimators": 100, "learning_rate": 0.1, "num_leaves": 8, "max_depth": 3,
           "min_data_in_leaf": 20, "truncation_level": 30}  # fmt: skip
    compare("synthetic 300/1000 (8 leaves)", train, test, cfg, 5, args.threads, args.repeats)

    fold = _shared_data() / "letor4_mq2008" / "Fold1"
    if fold.is_dir():
        tr, te = load_letor(fold / "train.txt"), load_letor(fold / "test.txt")
        cfg = {"n_estimators": 100, "learning_rate": 0.1, "num_leaves": 31, "max_depth": -1,
               "min_data_in_leaf": 20, "truncation_level": 30}  # fmt: skip
        compare("MQ2008 Fold1 (31 leaves)", tr, te, cfg, 10, args.threads, args.repeats)
    else:
        print(f"MQ2008 skipped: {fold} not found (set CLICKRANK_SHARED_DATA)")

    scaling(args.threads, 1 if args.quick else args.repeats, args.quick)


if __name__ == "__main__":
    main()
