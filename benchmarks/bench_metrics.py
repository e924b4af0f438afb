"""Benchmark: vectorized NDCG@10 against a plain per-query Python loop.

Times :func:`clickrank.metrics.ndcg` over ``--queries`` synthetic queries of
``--docs`` documents (random scores rounded to create ties, labels 0-4), and a
straightforward per-query loop (``sorted`` with the same stable tie rule, then
the DCG sum) on a subset of ``--loop-queries`` queries, extrapolated linearly to
the full size (the vectorized time is the best of ``--repeat`` runs; the
machine may be shared). Both are run in the same process, and the loop's values on the
subset are checked against the vectorized ones before any time is printed.

Usage::

    python benchmarks/bench_metrics.py               # 1,000,000 queries x 30 docs
    python benchmarks/bench_metrics.py --queries 100000 --k 5
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from clickrank.metrics import average_precision, err, ndcg


def loop_ndcg(scores: np.ndarray, labels: np.ndarray, qptr: np.ndarray, k: int) -> np.ndarray:
    """Baseline: one Python iteration per query (what a simple script would do)."""
    out = np.empty(len(qptr) - 1)
    discount = [1.0 / math.log2(j + 2) for j in range(k)]
    for q in range(len(qptr) - 1):
        s = scores[qptr[q] : qptr[q + 1]].tolist()
        y = labels[qptr[q] : qptr[q + 1]].tolist()
        order = sorted(range(len(s)), key=lambda i: -s[i])  # stable: ties keep row order
        dcg = sum((2.0 ** y[i] - 1) * d for i, d in zip(order[:k], discount, strict=False))
        ideal = sorted(y, reverse=True)[:k]
        idcg = sum((2.0**g - 1) * d for g, d in zip(ideal, discount, strict=False))
        out[q] = dcg / idcg if idcg > 0 else math.nan
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=1_000_000, help="number of queries")
    parser.add_argument("--docs", type=int, default=30, help="documents per query")
    parser.add_argument("--k", type=int, default=10, help="cut-off")
    parser.add_argument(
        "--loop-queries",
        type=int,
        default=10_000,
        help="queries timed with the Python loop (then extrapolated)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs of the vectorized metric; the fastest is reported",
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n_q, n_d = args.queries, args.docs
    scores = rng.normal(size=n_q * n_d).round(2)  # rounded: some ties
    labels = rng.choice(5, size=n_q * n_d, p=[0.5, 0.25, 0.13, 0.08, 0.04]).astype(np.float64)
    qptr = np.arange(n_q + 1, dtype=np.int64) * n_d

    ndcg(scores[: 100 * n_d], labels[: 100 * n_d], qptr[:101], k=args.k)  # warm-up
    t_vec = math.inf
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        result = ndcg(scores, labels, qptr, k=args.k)
        t_vec = min(t_vec, time.perf_counter() - t0)

    m = min(args.loop_queries, n_q)
    t0 = time.perf_counter()
    ref = loop_ndcg(scores[: m * n_d], labels[: m * n_d], qptr[: m + 1], args.k)
    t_loop_subset = time.perf_counter() - t0
    np.testing.assert_allclose(ref, result.values[:m], rtol=1e-10)
    t_loop = t_loop_subset * n_q / m

    print(f"NDCG@{args.k} over {n_q:,} queries x {n_d} documents ({n_q * n_d:,} rows)")
    print(
        f"  clickrank.metrics.ndcg : {t_vec:8.2f} s   {n_q / t_vec:12,.0f} queries/s"
        f"   (best of {max(1, args.repeat)})"
    )
    print(
        f"  per-query Python loop  : {t_loop:8.2f} s   {n_q / t_loop:12,.0f} queries/s"
        f"   (timed on {m:,} queries: {t_loop_subset:.2f} s, extrapolated)"
    )
    print(f"  speed-up               : {t_loop / t_vec:8.1f} x")
    print(
        f"  mean NDCG@{args.k} = {result.mean:.4f}, empty queries = {result.n_empty:,}"
        f" (empty={result.empty!r})"
    )
    for func in (err, average_precision):
        t0 = time.perf_counter()
        r = func(scores, labels, qptr, k=args.k)
        print(f"  {r.name:<22} : {time.perf_counter() - t0:8.2f} s   mean {r.mean:.4f}")


if __name__ == "__main__":
    main()
