"""Benchmark: click-log simulation against the bare cost of drawing its random numbers.

Run ``python benchmarks/bench_simulation.py`` (``--help`` for sizes). It times

1. PBM simulation of ``--sessions`` sessions x 10 positions on synthetic data
   (10,000 queries x 30 documents) under a production ranker (clickrank LambdaMART), to an
   in-memory polars log, next to ``np.random.default_rng().random(n * 10)``
   (the bare cost of the uniforms alone; target: <= 3x, issue 21), on ``--jobs`` threads
   (``simulate(n_jobs=...)``; the bare draw is numpy's, on one), with a breakdown of
   where the time goes (query choice, the lists' cells, clicks, table), the
   floor of writing the log's columns to fresh memory, and the
   cost of the generic click path (materialized uniforms, ``model.sample``)
   that PBM's fused draws avoid;
2. the same for every other click model (ratio to ``n * 10 * n_uniforms``; target <= 5x);
3. ``--stream-sessions`` sessions streamed to parquet in a child process,
   reporting wall time and peak RSS (``resource.getrusage``; target < 4 GB).
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from clickrank._core._random import STREAM_CLICK, session_uniforms
from clickrank.clickmodels import make_click_model
from clickrank.datasets import synthetic
from clickrank.policies import DeterministicPolicy
from clickrank.policies.production import production_ranker
from clickrank.simulation import (
    _apply_interventions,
    _Cells,
    _click_sampler,
    _id_source,
    _query_sampler,
    _RowTable,
    _sample_queries,
    _to_table,
    simulate,
)

K = 10


def best(f, repeat: int = 3, fresh: bool = False) -> tuple[float, object]:
    """Best time of ``repeat`` calls; ``fresh`` frees the previous result before each call.

    Without ``fresh`` a call can reuse memory that an earlier result gave back
    (the usual steady state); with it every result is written to newly mapped
    pages, whose first touch is expensive on virtual machines.
    """
    out, t_best = None, np.inf
    for _ in range(repeat):
        if fresh:
            out = None
        t = time.perf_counter()
        out = f()
        t_best = min(t_best, time.perf_counter() - t)
    return t_best, out


def setup(seed: int = 0):
    """Synthetic data and the production ranker; the policy ranks by its precomputed scores."""
    data = synthetic(10_000, 30, seed=seed)
    ranker = production_ranker(data, 0.01, seed=seed)
    policy = DeterministicPolicy(ranker.predict(data.X), name="production")
    return data, policy, ranker


@numba.njit(parallel=True)
def _touch(session, query, doc, label, click):  # pragma: no cover - numba
    for i in numba.prange(session.shape[0]):
        session[i] = i
        query[i] = i
        doc[i] = i
        label[i] = i
        click[i] = True


def write_floor(n: int) -> float:
    """Best time to write the log's columns (session, query, doc, label: 8 bytes a row;
    click: 1) into fresh numpy arrays on numba's threads: no draws, no gathers."""

    def columns():
        cols = [np.empty(n * K, dtype=t) for t in (np.uint64, np.int64, np.int64, np.float64)]
        _touch(*cols, np.empty(n * K, dtype=np.bool_))

    _touch(*(np.empty(1, dtype=t) for t in (np.uint64, np.int64, np.int64, np.float64, bool)))
    return best(columns)[0]


def breakdown(data, policy, model, n: int) -> tuple[dict[str, float], dict[str, float]]:
    """Time each step of one chunk of ``n`` sessions (best of 3), and the generic click path."""
    sess = np.arange(n, dtype=np.uint64)
    t, generic = {}, {}
    t["prepare (rank all queries)"], prep = best(lambda: policy.prepare(data, K))
    sampler = _query_sampler(data, None)
    t["query choice"], q = best(lambda: _sample_queries(0, sess, sampler))
    qids, docs = _id_source(data.qid), _id_source(data.doc)
    table = _RowTable(data.y, docs)
    lists = table.of_lists(prep.lists)
    picked, rc = prep.pick(q, sess, 0)
    t["lists, labels and id columns"], cells = best(
        lambda: _Cells.from_lists(lists, table, sess, picked, q, qids)
    )
    ic, pv, sk = _apply_interventions([], cells.labels, cells.rows, 0, sess)
    # a logger whose lists depend on the session gathers rows, then their cells
    generic["rows from the logger"], (rows, _) = best(lambda: prep.rank(q, sess, 0))
    fresh_rows = iter([rows.copy() for _ in range(3)])  # fill writes doc ids over rows
    generic["their labels and id columns"], _ = best(
        lambda: _Cells.fill(next(fresh_rows), table, sess, q, qids)
    )
    rows = fresh_rows = None
    labels = cells.labels
    clicks_of = _click_sampler(model, data.y, K)
    t["clicks (as in simulate)"], c = best(lambda: clicks_of(0, sess, labels))
    n_u = model.n_uniforms
    generic["uniforms [S, K, n_uniforms]"], u = best(
        lambda: session_uniforms(0, sess, K * n_u, STREAM_CLICK)
    )
    u = u.reshape(n, K, n_u)
    generic["model.sample(labels, u)"], _ = best(lambda: model.sample(labels, u))
    u = None  # free the uniforms before timing the table
    t["table conversion"], _ = best(
        lambda: _to_table(
            cells=cells,
            queries=q,
            clicks=c,
            icode=ic,
            rcode=rc,
            pivot=pv,
            swap_k=sk,
            qids=qids,
            docs=docs,
            ranker_names=prep.names,
        )
    )
    return t, generic


def stream_child(n: int, chunk: int) -> None:
    data, policy, _ = setup()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "log.parquet"
        t = time.perf_counter()
        simulate(
            data,
            policy=policy,
            click_model=make_click_model("pbm"),
            n_sessions=n,
            top_k=K,
            seed=0,
            chunk_size=chunk,
            out=out,
        )
        dt = time.perf_counter() - t
        size = out.stat().st_size
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # KiB -> GiB
    print(f"{dt:.2f} {rss:.3f} {size}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=1_000_000)
    ap.add_argument("--stream-sessions", type=int, default=10_000_000)
    ap.add_argument("--chunk-size", type=int, default=200_000)
    ap.add_argument("--jobs", type=int, default=1, help="threads of simulate (n_jobs)")
    ap.add_argument("--skip-stream", action="store_true")
    ap.add_argument("--stream-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.stream_child:
        stream_child(args.stream_sessions, args.chunk_size)
        return

    n = args.sessions
    numba.set_num_threads(args.jobs)  # the breakdown's kernels, as simulate(n_jobs=...)
    data, policy, ranker = setup()
    pbm = make_click_model("pbm")

    def sim(model=pbm, logger=policy):
        return simulate(data, policy=logger, click_model=model, n_sessions=n, top_k=K,
                        chunk_size=args.chunk_size, n_jobs=args.jobs)  # fmt: skip

    # Warm-up at full size: numba JIT, and the first touch of the log's memory, which
    # a fresh process pays once (expensive on virtual machines); the bare draw below is
    # likewise timed on memory its earlier repeats touched.
    sim()
    print(f"data: {data!r}; production ranker: clickrank LambdaMART, 50 trees, 1% of queries")
    print(
        f"{n:,} sessions x {K} positions, in-memory log, {args.jobs} thread(s) "
        "(the bare draw: numpy, one), best of 3 after a warm-up run\n"
    )

    t_bare, _ = best(lambda: np.random.default_rng().random(n * K))
    t_pbm, log = best(sim)
    print(f"bare rng.random({n * K:,}):        {t_bare:8.3f} s")
    print(
        f"simulate PBM -> {log.height:,} rows:   {t_pbm:8.3f} s   "
        f"ratio {t_pbm / t_bare:5.1f}x (target <= 3x)"
    )
    log = None
    t_bare_f, _ = best(lambda: np.random.default_rng().random(n * K), fresh=True)
    t_pbm_f, _ = best(sim, fresh=True)
    print(
        f"  each run on freshly mapped memory: bare {t_bare_f:.3f} s, simulate {t_pbm_f:.3f} s, "
        f"ratio {t_pbm_f / t_bare_f:.1f}x"
    )
    t_pred, _ = best(lambda: ranker.predict(data.X))
    with_model = DeterministicPolicy(ranker, name="production")
    t_all, _ = best(lambda: sim(logger=with_model))
    print(
        f"  + scoring all {data.n_docs:,} docs with the production ranker (once per run): "
        f"{t_pred:.3f} s; "
        f"simulate with the ranker object {t_all:.3f} s ({t_all / t_bare:.1f}x)"
    )
    print(f"\nwhere the time goes ({n:,} sessions in one chunk, best of 3):")
    parts, generic = breakdown(data, policy, pbm, n)
    for name, t in parts.items():
        print(f"  {name:<28} {t:8.3f} s  ({t / t_bare:5.1f}x bare)")
    print(f"  {'sum':<28} {sum(parts.values()):8.3f} s")
    t_floor = write_floor(n)
    print(
        f"  floor: writing the log's columns (33 bytes a row) to fresh memory, nothing else: "
        f"{t_floor:.3f} s ({t_floor / t_bare:.1f}x bare)"
    )
    print(
        "  (a fixed ranking's lists are copied per query; a logger whose lists depend on the "
        "session\n   (Plackett-Luce) gathers rows, then each row's cells:)"
    )
    for name in ("rows from the logger", "their labels and id columns"):
        print(f"    {name:<26} {generic[name]:8.3f} s  ({generic[name] / t_bare:5.1f}x bare)")
    if getattr(pbm, "independent_clicks", False):
        print(
            "  (PBM clicks are fused: hash + compare in one pass, probabilities from a grade "
            "table;\n   the generic path for other models costs:)"
        )
        for name in ("uniforms [S, K, n_uniforms]", "model.sample(labels, u)"):
            print(f"    {name:<26} {generic[name]:8.3f} s  ({generic[name] / t_bare:5.1f}x bare)")

    print("\nother click models (ratio to rng.random(n * K * n_uniforms)):")
    for name in ("trust", "cascade", "dcm", "dbn", "sdbn", "ubm"):
        model = make_click_model(name)
        n_u = model.n_uniforms
        tb, _ = best(lambda n_u=n_u: np.random.default_rng().random(n * K * n_u))
        tm, _ = best(lambda m=model: sim(m), repeat=2)
        print(
            f"  {name:<8} n_uniforms={n_u}  simulate {tm:7.3f} s  bare {tb:7.3f} s  "
            f"ratio {tm / tb:5.1f}x"
        )

    if not args.skip_stream:
        m = args.stream_sessions
        print(
            f"\nstreaming {m:,} sessions ({m * K:,} rows) to parquet, "
            f"chunk_size={args.chunk_size:,} (child process)..."
        )
        res = subprocess.run(
            [
                sys.executable,
                __file__,
                "--stream-child",
                "--stream-sessions",
                str(m),
                "--chunk-size",
                str(args.chunk_size),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        dt, rss, size = res.stdout.split()
        print(
            f"  wall {float(dt):.1f} s, peak RSS {float(rss):.2f} GB (target < 4 GB), "
            f"file {int(size) / 1024**2:.0f} MB"
        )


if __name__ == "__main__":
    main()
