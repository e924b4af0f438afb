"""Distributed training: SparkXGBRanker vs a local XGBRanker vs clickrank's LambdaMART.

Run ``python benchmarks/bench_distributed.py`` (``--master local[2]`` by default;
``--master standalone`` starts a :class:`clickrank.engine.cluster.StandaloneCluster`
of ``--workers`` one-core workers on this machine; any other Spark master, e.g.
``spark://host:7077``, with ``--tmp`` on a path every executor reads). Figures
in docs/scale.md, "Distributed training".

What it does, for MQ2008 Fold1 (when ``--mq2008`` holds it) and synthetic data:

1. Simulates a click log on the training queries (a noisy logger ranking by
   one feature, top 10 shown, PBM clicks with θ_p = 1/p) and writes the
   features (``clickrank.datasets.save_parquet``) and the log as parquet.
2. Distributed: reads both with Spark, builds the IPS target (true θ,
   candidates ``shown``) from the feature keys (``spark_target``: the log is
   aggregated on Spark), and fits ``SparkRanker`` (early stopping on the
   NDCG@10 of held-out queries' clicks, then a refit on all queries).
3. Local XGBoost: ``xgboost.XGBRanker`` with the same parameters on the same
   target (``make_target`` on the local data), twice: with the number of trees
   the distributed selection chose (``local_xgboost``: what differs is only
   where the trees grow), and with its own early stopping on the same held-out
   queries (``validation_queries``) and a refit (``local_xgboost_selected``:
   the whole procedure on one machine).
4. clickrank's ``LambdaMART`` (its lambdas, LightGBM trees) on the same
   target with the same number of trees, learning rate and depth.

It prints the test NDCG@10 (labels, exponential gain; queries without a
relevant document skipped) and the fit times, then one JSON line.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import tempfile
import time
from pathlib import Path

import numpy as np

from clickrank.clickmodels import make_click_model
from clickrank.datasets import RankingData, load_letor, save_parquet, synthetic
from clickrank.engine import read_spark_log, spark_session
from clickrank.engine.cluster import StandaloneCluster
from clickrank.lambdamart import LambdaMART
from clickrank.metrics import ndcg
from clickrank.policies import DeterministicPolicy
from clickrank.simulation import simulate
from clickrank.targets import make_target
from clickrank.training.distributed import (
    SparkRanker,
    read_spark_data,
    spark_target,
    validation_queries,
)

TOP_K = 10
THETA = 1.0 / np.arange(1, TOP_K + 1)


def _ndcg10(scores: np.ndarray, data: RankingData) -> float:
    return float(ndcg(scores, data.y, data.qptr, k=10).mean)


def _datasets(args) -> dict[str, tuple[RankingData, RankingData]]:
    out = {}
    fold = Path(args.mq2008)
    if (fold / "train.txt").exists():
        out["MQ2008 Fold1"] = (load_letor(fold / "train.txt"), load_letor(fold / "test.txt"))
    else:
        print(f"MQ2008 is not at {fold}: synthetic data only")
    data = synthetic(args.synthetic_queries, 20, seed=1)
    n = int(0.7 * data.n_queries)
    out["synthetic"] = (data.subset(np.arange(n)), data.subset(np.arange(n, data.n_queries)))
    return out


def _local_xgboost(train, tgt, ranker: SparkRanker, trees: int | None = None) -> tuple:
    """XGBRanker with the ranker's parameters: ``trees`` trees, or (None) the ranker's
    selection, early stopping on the same held-out queries and a refit on all candidate
    rows with the chosen trees."""
    import xgboost as xgb

    start = time.perf_counter()
    rows = np.ones(train.n_docs, bool) if tgt.candidates is None else tgt.candidates
    q = train.query_index
    params = {**ranker.xgb_params(), "n_jobs": 1}
    if trees is None:
        held = validation_queries(train.qid.tolist(), ranker.valid_fraction, ranker.seed)
        fit, val = rows & ~held[q], rows & held[q]
        first = xgb.XGBRanker(**params, early_stopping_rounds=ranker.early_stopping_rounds)
        first.fit(train.X[fit], tgt.gains[fit], qid=q[fit], verbose=False,
                  eval_set=[(train.X[val], tgt.gains[val])], eval_qid=[q[val]])  # fmt: skip
        trees = int(first.best_iteration) + 1
    model = xgb.XGBRanker(**{**params, "n_estimators": trees})
    model.fit(train.X[rows], tgt.gains[rows], qid=q[rows])
    return model, trees, time.perf_counter() - start


def run(name: str, train: RankingData, test: RankingData, spark, args, tmp: Path) -> dict:
    log = simulate(
        train,
        policy=DeterministicPolicy(train.X[:, 0]),
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=args.sessions,
        top_k=TOP_K,
        seed=2,
    )
    folder = tmp / name.replace(" ", "_")
    folder.mkdir(parents=True, exist_ok=True)
    save_parquet(train, folder / "train.parquet")
    log.write_parquet(folder / "log.parquet")
    ranker = SparkRanker(n_estimators=args.trees, learning_rate=0.1, max_depth=args.max_depth,
                         num_workers=args.workers, early_stopping_rounds=args.early_stopping,
                         eval_at=10, valid_fraction=0.2, seed=0)  # fmt: skip
    start = time.perf_counter()
    features = read_spark_data(folder / "train.parquet", spark)
    slog = read_spark_log(folder / "log.parquet", spark)
    table, _ = spark_target(features, slog, "ips", THETA, candidates="shown", clip=None)
    target_seconds = time.perf_counter() - start
    ranker.fit(features, table, target_name="ips")
    dist_seconds = time.perf_counter() - start

    tgt = make_target("ips", train, log, THETA, candidates="shown", clip=None)
    local, _, local_seconds = _local_xgboost(train, tgt, ranker, ranker.best_iteration_)
    own, own_trees, own_seconds = _local_xgboost(train, tgt, ranker)

    start = time.perf_counter()
    lm = LambdaMART(n_estimators=ranker.best_iteration_, learning_rate=0.1,
                    max_depth=args.max_depth, num_leaves=2**args.max_depth, seed=0)  # fmt: skip
    lm.fit(train, tgt)
    lm_seconds = time.perf_counter() - start
    return {
        "data": name,
        "train": f"{train.n_queries} queries, {train.n_docs} docs, {train.n_features} features",
        "candidates": int(tgt.n_candidates or train.n_docs),
        "ndcg10": {
            "spark_xgboost": _ndcg10(ranker.predict(test), test),
            "local_xgboost": _ndcg10(local.predict(test.X), test),
            "local_xgboost_selected": _ndcg10(own.predict(test.X), test),
            "lambdamart": _ndcg10(lm.predict(test), test),
            "logger": _ndcg10(test.X[:, 0].astype(float), test),
        },
        "trees": {
            "spark_xgboost": ranker.best_iteration_,
            "local_xgboost": ranker.best_iteration_,
            "local_xgboost_selected": own_trees,
            "lambdamart": ranker.best_iteration_,
        },
        "seconds": {
            "spark_target": round(target_seconds, 1),
            "spark_total": round(dist_seconds, 1),
            "local_xgboost": round(local_seconds, 1),
            "local_xgboost_selected": round(own_seconds, 1),
            "lambdamart": round(lm_seconds, 1),
        },
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--master", default="local[2]",
                    help="Spark master (local[2], spark://..., or standalone: a cluster "
                    "started here)")  # fmt: skip
    ap.add_argument("--workers", type=int, default=2, help="XGBoost workers (Spark tasks)")
    ap.add_argument("--mq2008", default="/work/shared/data/letor4_mq2008/Fold1")
    ap.add_argument("--synthetic-queries", type=int, default=600)
    ap.add_argument("--sessions", type=int, default=50_000)
    ap.add_argument("--trees", type=int, default=300)
    ap.add_argument("--max-depth", type=int, default=4)
    ap.add_argument("--early-stopping", type=int, default=50)
    ap.add_argument("--tmp", default=None, help="folder for the parquet files (executors read it)")
    args = ap.parse_args()
    logging.getLogger("XGBoost-PySpark").setLevel(logging.WARNING)
    start = time.perf_counter()
    conf = {"spark_sql_shuffle_partitions": str(2 * args.workers), "spark_ui_enabled": "false"}
    with contextlib.ExitStack() as stack:
        if args.master == "standalone":
            cluster = stack.enter_context(StandaloneCluster(workers=args.workers, memory="2g"))
            spark = cluster.session(**conf)
        else:
            spark = spark_session(args.master, **conf)
        stack.callback(spark.stop)
        print(f"Spark session on {args.master}: {time.perf_counter() - start:.1f} s")
        results = _run_all(args, spark)
    print(json.dumps({"master": args.master, "workers": args.workers, "results": results}))


def _run_all(args: argparse.Namespace, spark) -> list[dict]:
    results = []
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        for name, (train, test) in _datasets(args).items():
            results.append(run(name, train, test, spark, args, Path(tmp)))
            r = results[-1]
            print(f"\n{name} ({r['train']}; {r['candidates']} candidates, IPS, true theta)")
            print(f"{'ranker':<24}{'NDCG@10':>9}{'trees':>7}{'fit s':>8}")
            s = r["seconds"]
            rows = [("spark_xgboost", s["spark_total"]), ("local_xgboost", s["local_xgboost"]),
                    ("local_xgboost_selected", s["local_xgboost_selected"]),
                    ("lambdamart", s["lambdamart"]), ("logger", None)]  # fmt: skip
            for key, sec in rows:
                trees = r["trees"].get(key, "")
                secs = "" if sec is None else f"{sec:.1f}"
                print(f"{key:<24}{r['ndcg10'][key]:>9.4f}{trees!s:>7}{secs:>8}")
            print(f"(spark_total includes {s['spark_target']:.1f} s for the target on Spark)")
    return results


if __name__ == "__main__":
    main()
