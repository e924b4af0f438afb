"""Training at 10^6-10^7 rows: one machine against a Spark standalone cluster.

Run ``python benchmarks/bench_train_scale.py`` (10^6 and 10^7 rows x 100
features, 20 trees: about 4 GB of parquet at 10^7 rows, so check ``df -h``;
25-40 minutes on 2 cores), or smaller for a quick look::

    python benchmarks/bench_train_scale.py --rows 200000 --trees 5

What it does
------------
1. Writes a synthetic feature table (``query``, ``doc``, ``f1..f100`` float32,
   100 documents per query; part files of 10^6 rows, the layout of
   :func:`clickrank.datasets.save_parquet`) and a gains table (``query``,
   ``doc``, ``gain``: a float gain from 3 of the features plus noise, standing
   in for clickrank's IPS gains) to ``--tmp``.
2. **local**: in a child process, reads both with polars and trains
   ``xgboost.XGBRanker`` with the parameters of
   :class:`clickrank.training.distributed.SparkRanker` (``rank:ndcg`` on float gains,
   hist, depth 6, ``--trees`` trees, no early stopping) on ``--threads``
   threads: the single-machine way, which needs the whole table in memory.
3. **cluster**: in a child process, starts a
   :class:`clickrank.engine.cluster.StandaloneCluster` (a master and two
   workers of one core each, separate processes), reads the feature table with
   Spark and trains :class:`~clickrank.training.distributed.SparkRanker` on it with two
   XGBoost workers (one Spark task per worker): the features never reach the
   driver.
4. Reports wall time (data reading included, cluster start-up apart) and the
   peak resident memory of every process (``VmHWM``: the driver's Python and
   JVM, each worker's daemon, executor JVM and Python workers), and the
   training NDCG@10 of both models on the gains (the same trees should score
   the same), as one JSON line per size; deletes the data unless ``--keep``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PART_ROWS = 1_000_000


def write_data(folder: Path, rows: int, features: int, per_query: int, seed: int) -> None:
    """Feature and gain tables, part by part (memory of one part)."""
    import polars as pl

    (folder / "features").mkdir(parents=True)
    (folder / "gains").mkdir()
    rng = np.random.default_rng(seed)
    w = np.zeros(features, dtype=np.float32)
    w[:3] = (1.0, 0.6, 0.3)
    for i, start in enumerate(range(0, rows, PART_ROWS)):
        n = min(PART_ROWS, rows - start)
        row = np.arange(start, start + n, dtype=np.int64)
        X = rng.standard_normal((n, features), dtype=np.float32)
        gain = np.maximum(X @ w + 0.5 * rng.standard_normal(n, dtype=np.float32), 0.0)
        keys = {"query": row // per_query, "doc": row % per_query}
        cols = {f"f{j + 1}": X[:, j] for j in range(features)}
        pl.DataFrame({**keys, **cols}).write_parquet(folder / "features" / f"part-{i:05d}.parquet")
        pl.DataFrame({**keys, "gain": gain.astype(np.float64)}).write_parquet(
            folder / "gains" / f"part-{i:05d}.parquet"
        )


def _peak_kib(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(ln.split()[1]) for ln in status.splitlines() if ln.startswith("VmHWM")), 0)


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


def _ndcg(scores: np.ndarray, gains: np.ndarray, qptr: np.ndarray) -> float:
    """Mean NDCG@10 with linear gains (the trees' objective) over queries with a gain."""
    from clickrank.metrics import ndcg

    return float(ndcg(scores, gains, qptr, k=10, gain="linear"))


def run_local(folder: Path, trees: int, threads: int) -> dict:
    import polars as pl
    import xgboost as xgb

    from clickrank.training.distributed import SparkRanker

    t0 = time.perf_counter()
    feats = pl.read_parquet(folder / "features")
    gains = pl.read_parquet(folder / "gains")
    cols = [c for c in feats.columns if c.startswith("f")]
    X = feats.select(cols).to_numpy()
    del feats
    y = gains["gain"].to_numpy()
    qid = gains["query"].to_numpy()
    read = time.perf_counter() - t0
    params = {**SparkRanker(n_estimators=trees).xgb_params(), "n_jobs": threads}
    model = xgb.XGBRanker(**params).fit(X, y, qid=qid)
    fit = time.perf_counter() - t0 - read
    qptr = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True])
    return {
        "seconds": time.perf_counter() - t0,
        "read_seconds": read,
        "fit_seconds": fit,
        "ndcg10": _ndcg(model.predict(X), y, qptr),
        "peak_rss": {"python": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024},
    }


def run_cluster(folder: Path, trees: int, executor_memory: str) -> dict:
    import polars as pl

    from clickrank.engine.cluster import StandaloneCluster
    from clickrank.training.distributed import SparkRanker, read_spark_data

    with StandaloneCluster(workers=2, cores=1, memory="16g", folder=folder / "cluster") as c:
        t0 = time.perf_counter()
        spark = c.session(spark_executor_memory=executor_memory, spark_driver_memory="2g",
                          spark_sql_shuffle_partitions="8")  # fmt: skip
        started = time.perf_counter() - t0
        t0 = time.perf_counter()
        features = read_spark_data(str(folder / "features"), spark)
        gains = pl.read_parquet(folder / "gains")
        model = SparkRanker(n_estimators=trees, early_stopping_rounds=None, num_workers=2)
        model.fit(features, gains, target_name="synthetic")
        seconds = time.perf_counter() - t0
        peaks = {"driver python": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
        for pid in _children(os.getpid()):  # the driver's JVM (pyspark's SparkSubmit)
            if b"deploy.SparkSubmit" in Path(f"/proc/{pid}/cmdline").read_bytes():
                peaks["driver jvm"] = _peak_kib(pid) * 1024
        for p in c.processes():
            peaks[f"{p['role']} {p['kind']} {p['pid']}"] = p["peak_rss"]
        spark.stop()
    # the cluster's training NDCG, scored here on the same rows as the local model's
    feats = pl.read_parquet(folder / "features")
    X = feats.select([col for col in feats.columns if col.startswith("f")]).to_numpy()
    del feats
    qid = gains["query"].to_numpy()
    qptr = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True])
    return {
        "seconds": seconds,
        "session_start_seconds": started,
        "ndcg10": _ndcg(model.predict(X), gains["gain"].to_numpy(), qptr),
        "peak_rss": peaks,
    }


def child(kind: str, folder: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, "--data", str(folder)]
    cmd += ["--trees", str(args.trees), "--threads", str(args.threads)]
    cmd += ["--executor-memory", args.executor_memory]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        return {"error": res.stderr.strip().splitlines()[-3:]}
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=float, nargs="+", default=[1e6, 1e7])
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--per-query", type=int, default=100)
    ap.add_argument("--trees", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2, help="XGBoost threads of the local fit")
    ap.add_argument("--executor-memory", default="4g")
    ap.add_argument("--parts", nargs="+", default=["local", "cluster"])
    ap.add_argument("--tmp", type=Path, default=None)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", choices=["local", "cluster"], help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run = run_local if args.child == "local" else run_cluster
        extra = args.threads if args.child == "local" else args.executor_memory
        print(json.dumps(run(args.data, args.trees, extra)))
        return
    for rows in args.rows:
        folder = Path(tempfile.mkdtemp(prefix="clickrank-train-scale-", dir=args.tmp))
        try:
            t0 = time.perf_counter()
            write_data(folder, int(rows), args.features, args.per_query, args.seed)
            out = {"rows": int(rows), "features": args.features, "trees": args.trees,
                   "write_seconds": time.perf_counter() - t0}  # fmt: skip
            for kind in args.parts:
                out[kind] = child(kind, folder, args)
                print(f"{int(rows):,} rows, {kind}: {json.dumps(out[kind])}", file=sys.stderr)
            print(json.dumps(out), flush=True)
        finally:
            if not args.keep:
                shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
