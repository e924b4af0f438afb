"""Swap propensities at 10^9 rows: Spark ``local[2]`` vs the polars streaming path.

Run ``nice python benchmarks/bench_spark.py`` (the full size: 10^8 sessions x
10 positions = 10^9 rows, about 1.7 GB of parquet; simulating it takes about
4 minutes on 2 cores, the estimates about 20 s with polars and 90 s with
Spark; figures in docs/scale.md), or smaller for a quick look::

    python benchmarks/bench_spark.py --sessions 1000000

What it does
------------
1. Streams the log of ``benchmarks/bench_scale.py`` (synthetic data, three
   logging rankers, 20% swap and 20% randomized sessions, PBM clicks with
   θ_p = 1/p) to a parquet folder under ``--tmp`` (default: the folder that
   holds this checkout, as ``bench_scale.py``; check ``df -h`` first), or
   reuses ``--log``.
2. Estimates swap propensities in a child process per engine: polars
   (``swap(pl.scan_parquet(folder))``: the streaming engine; no value check
   of the log, as on Spark) and Spark (``swap(read_spark_log(folder))`` on a
   ``local[2]`` session). Each child reports its wall time and the peak
   resident memory (``VmHWM``) of itself and, for Spark, of the JVM and any
   Python workers it started (the sum of their peaks, an upper bound of the
   peak of the sum).
3. Checks that both engines give the same θ̂, prints a table and a paper
   estimate for 10^11 rows on a 100-node cluster (assumptions printed with
   it), deletes the log (unless ``--keep`` or ``--log``) and prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

# the child: estimate, then report its own peak RSS and that of its descendants (the JVM)
CHILD = r"""
import json, os, sys, time
t0 = time.perf_counter()
engine, folder = sys.argv[1], sys.argv[2]
from clickrank.propensity import swap
if engine == "polars":
    import polars as pl
    log = pl.scan_parquet(os.path.join(folder, "*.parquet"))
else:
    from clickrank.engine import read_spark_log, spark_session
    spark = spark_session("local[2]", spark_driver_memory="2g", spark_ui_enabled="false")
    log = read_spark_log(folder, spark)
ready = time.perf_counter() - t0  # interpreter imports, JVM and session start
est = swap(log)
seconds = time.perf_counter() - t0

def hwm(pid):
    try:
        for ln in open(f"/proc/{pid}/status"):
            if ln.startswith("VmHWM:"):
                return int(ln.split()[1])
    except OSError:
        return 0
    return 0

def descendants(pid):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                ppid = int(open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out += [int(p), *descendants(int(p))]
    return out

kids = descendants(os.getpid())
print(json.dumps({
    "seconds": seconds,
    "startup_seconds": ready if engine == "spark" else 0.0,
    "driver_kib": hwm(os.getpid()),
    "children_kib": sum(hwm(k) for k in kids),
    "theta": [float(x) for x in est.theta],
    "n_sessions": est.n_sessions,
}))
"""


def run_child(engine: str, folder: Path) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, engine, str(folder)], capture_output=True, text=True
    )
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{engine} failed:\n{proc.stdout}\n{proc.stderr[-3000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    res["wall_seconds"] = wall  # with interpreter (and JVM) start-up
    res["peak_mib"] = (res["driver_kib"] + res["children_kib"]) / 1024
    return res


def paper_estimate(rows: float, seconds: float, cores: int, bytes_per_row: float) -> dict:
    """Cost of ``10^11`` rows on 100 nodes, from the throughput per core measured here.

    Assumptions: the job scales linearly in cores (each task reads its parquet
    split and aggregates it to a few hundred (arm, pair, position) rows, so
    the shuffle is the statistics only: kilobytes per task); 16 cores and
    enough disk/network bandwidth per node to read its share at the measured
    rate; one minute of job start and scheduling; the fit on the driver is
    milliseconds; an on-demand price of $0.80 per 16-core node-hour.
    """
    per_core = rows / (seconds * cores)  # rows per second per core, scan + partial aggregation
    big, nodes, cores_per_node, usd_node_hour = 1e11, 100, 16, 0.80
    scan = big / (per_core * nodes * cores_per_node)
    return {
        "rows": big,
        "nodes": nodes,
        "cores_per_node": cores_per_node,
        "rows_per_core_second": per_core,
        "parquet_tb": big * bytes_per_row / 1e12,
        "parquet_gb_per_node": big * bytes_per_row / nodes / 1e9,
        "scan_seconds": scan,
        "overhead_seconds": 60.0,  # job start, task scheduling, the driver's fit (assumed)
        "usd_node_hour": usd_node_hour,
        "usd": nodes * (scan + 60.0) / 3600 * usd_node_hour,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=100_000_000)
    ap.add_argument("--log", help="reuse this parquet folder (bench_scale's layout)")
    ap.add_argument(
        "--tmp",
        default=str(HERE.parents[1]),
        help="folder for the temporary log (needs ~18 bytes per session; check df -h)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    ap.add_argument("--engines", nargs="+", default=["polars", "spark"])
    args = ap.parse_args()

    sys.path.insert(0, str(HERE))
    import bench_scale

    tmp = None
    if args.log:
        folder = Path(args.log)
        made = {"sessions": None}
    else:
        tmp = Path(tempfile.mkdtemp(prefix="bench_spark_", dir=args.tmp))
        folder = tmp / "log"
        made = bench_scale.simulate_log(folder, args.sessions)
        print(f"[spark] log: {json.dumps(made)}", file=sys.stderr)
    try:
        files = list(folder.glob("*.parquet"))
        size = sum(f.stat().st_size for f in files)
        import polars as pl

        rows = pl.scan_parquet(folder / "*.parquet").select(pl.len()).collect().item()
        result: dict = {"log": {**made, "rows": rows, "parquet_bytes": size, "files": len(files)}}
        for engine in args.engines:
            r = run_child(engine, folder)
            result[engine] = r
            print(
                f"[spark] {engine:<7} {r['seconds']:8.1f} s (wall {r['wall_seconds']:.1f} s)  "
                f"peak {r['peak_mib']:8,.0f} MiB  θ̂ = {np.round(r['theta'], 4).tolist()}",
                file=sys.stderr,
            )
        if {"polars", "spark"} <= set(result):
            a, b = np.array(result["polars"]["theta"]), np.array(result["spark"]["theta"])
            result["max_abs_theta_difference"] = float(np.nanmax(np.abs(a - b)))
            sp = result["spark"]
            result["paper"] = paper_estimate(
                rows, sp["seconds"] - sp["startup_seconds"], 2, size / rows
            )
        print_table(result)
    finally:
        if tmp is not None and not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        elif tmp is not None:
            print(f"[spark] kept {tmp}", file=sys.stderr)
    print(json.dumps(result))


def print_table(result: dict) -> None:
    lines = [
        "| engine | estimate (s) | wall with start-up (s) | peak RSS (MiB) |",
        "|---|---|---|---|",
    ]
    for engine in ("polars", "spark"):
        if engine in result:
            r = result[engine]
            cells = (
                engine,
                f"{r['seconds']:.1f}",
                f"{r['wall_seconds']:.1f}",
                f"{r['peak_mib']:,.0f}",
            )
            lines.append("| " + " | ".join(cells) + " |")
    print("\n".join(lines), file=sys.stderr)
    if "paper" in result:
        p = result["paper"]
        print(
            f"[spark] paper: {p['rows']:.0e} rows on {p['nodes']} nodes x {p['cores_per_node']} "
            f"cores at {p['rows_per_core_second']:,.0f} rows/s/core (measured): "
            f"scan {p['scan_seconds']:.0f} s + {p['overhead_seconds']:.0f} s overhead, "
            f"{p['parquet_tb']:.2f} TB parquet ({p['parquet_gb_per_node']:.1f} GB per node), "
            f"about ${p['usd']:.2f} at ${p['usd_node_hour']}/node-hour"
            + ("" if result["log"]["rows"] >= 1e8 else " (small log: the rate is start-up bound)"),
            file=sys.stderr,
        )


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    main()
