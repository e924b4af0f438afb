"""Propensities at 10^9 rows: time and peak memory of ``clickrank propensity`` per estimator.

Run ``nice python benchmarks/bench_scale.py`` (the full size: 10^8 sessions x 10
positions = 10^9 rows, about 2 GB of parquet and 30-60 minutes on 2 cores), or
smaller for a quick look::

    python benchmarks/bench_scale.py --sessions 1000000 --em-sessions 500000

What it does
------------
1. Streams a log of ``--sessions`` sessions x 10 positions to a parquet folder
   in ``--tmp`` (default: a temporary folder next to this checkout; check
   ``df -h`` first): synthetic data, three logging rankers (for harvesting),
   20% swap and 20% top-10 randomization sessions, PBM clicks with
   θ_p = 1/p.
2. Runs ``clickrank propensity LOG --method M`` for swap, randomized and
   harvest-allpairs (each with its analytic interval) in a child process and
   reports wall time, peak RSS (``wait4``) and the largest relative error of
   θ̂ against 1/p. The command checks the log (one streaming pass) and
   computes the estimator's sufficient statistics in polars' streaming
   engine, so memory does not grow with the rows.
3. Runs ``clickrank propensity --method em`` (100 bootstrap replicates, the
   default interval) on the first ``--em-sessions`` sessions of the same log
   (a glob of its first part files).
4. Deletes the log (unless ``--keep``) and prints one JSON line with everything.

With ``--context`` every session also gets a ``device`` column (desktop 65 %, phone
30 %, tablet 5 %; the same PBM for all three, so each device's truth is 1/p too), and
every estimator runs twice, pooled and with ``--context device``: the time, peak RSS
and largest error of the per-context curves beside the pooled run's::

    nice python benchmarks/bench_scale.py --context --sessions 10000000 --em-sessions 1000000
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

K = 10
# the CLI in a child that reports its own peak RSS (VmHWM: reset by exec, unlike ru_maxrss,
# which a child inherits from this process at fork)
CLI = [
    sys.executable,
    "-c",
    (
        "import atexit, sys\n"
        "def hwm():\n"
        "    for ln in open('/proc/self/status'):\n"
        "        if ln.startswith('VmHWM:'):\n"
        "            print('VmHWM', ln.split()[1], file=sys.stderr)\n"
        "atexit.register(hwm)\n"
        "from clickrank.cli import main\n"
        "main()\n"
    ),
]


#: The ``--context`` column: device shares (one click model for all, so θ_p = 1/p in each).
DEVICES = {"desktop": 0.65, "phone": 0.30, "tablet": 0.05}


def simulate_log(out: Path, n_sessions: int, context: bool = False) -> dict:
    from clickrank.clickmodels import make_click_model
    from clickrank.datasets import synthetic
    from clickrank.policies import DeterministicPolicy, MixturePolicy
    from clickrank.simulation import Context, Randomize, Swap, simulate

    data = synthetic(300, 20, seed=0)
    mix = MixturePolicy([DeterministicPolicy(data.X[:, j], name=f"r{j}") for j in range(3)])
    t0 = time.perf_counter()
    simulate(
        data,
        policy=mix,
        click_model=make_click_model("pbm", eta=1.0),
        n_sessions=n_sessions,
        top_k=K,
        interventions=[Swap(0.2), Randomize(0.2)],
        seed=1,
        chunk_size=1_000_000,
        out=out,
        progress=True,
        context=Context("device", DEVICES) if context else None,
    )
    size = sum(f.stat().st_size for f in out.glob("*.parquet"))
    return {
        "sessions": n_sessions,
        "rows": n_sessions * K,
        "parquet_bytes": size,
        "files": len(list(out.glob("*.parquet"))),
        "simulate_seconds": round(time.perf_counter() - t0, 1),
    }


def run_cli(log: str, method: str, out: Path, context: bool = False) -> dict:
    """``clickrank propensity`` in a child process: wall time, peak RSS, θ and the CI
    (``context``: per device too, and the largest error of the devices' own curves)."""
    cmd = [*CLI, "propensity", log, "--method", method, "--out", str(out), "--force"]
    cmd += ["--context", "device"] if context else []
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr[-2000:]}")
    hwm = [ln.split()[1] for ln in proc.stderr.splitlines() if ln.startswith("VmHWM")]
    res = json.loads(out.read_text())
    theta = np.array(res["theta"], dtype=float)
    truth = 1.0 / np.arange(1, theta.size + 1)
    extra = {}
    if context:
        own = np.array([c["theta"] for c in res["contexts"]["curves"]], dtype=float)
        extra["contexts_max_rel_error"] = round(float(np.max(np.abs(own / truth - 1))), 5)
    return {
        "seconds": round(seconds, 1),
        "peak_rss_mib": round(int(hwm[-1]) / 1024),  # VmHWM is in KiB
        "theta": [round(x, 4) for x in theta],
        "lower": [round(x, 4) for x in res["lower"]],
        "upper": [round(x, 4) for x in res["upper"]],
        "max_rel_error": round(float(np.max(np.abs(theta / truth - 1))), 5),
        "n_sessions": res["n_sessions"],
        **extra,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=int, default=100_000_000)
    ap.add_argument("--em-sessions", type=int, default=10_000_000)
    ap.add_argument("--methods", nargs="+", default=["swap", "randomized", "harvest-allpairs"])
    ap.add_argument(
        "--tmp",
        default=str(Path(__file__).resolve().parents[2]),
        help="folder for the temporary log (needs ~20 bytes per session)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the generated log")
    ap.add_argument("--context", action="store_true",
                    help="a device column; each estimator pooled and per device")  # fmt: skip
    args = ap.parse_args()

    import polars as pl

    from clickrank.simulation import PART_SESSIONS

    print(f"cpus: {os.cpu_count()}, polars {pl.__version__}", file=sys.stderr)
    tmp = Path(tempfile.mkdtemp(prefix="bench_scale_", dir=args.tmp))
    runs = [False, True] if args.context else [False]

    def report(name: str, r: dict, what: str) -> None:
        ctx = r.get("contexts_max_rel_error")
        more = "" if ctx is None else f", per device {ctx:.3%}"
        print(f"[scale] {name:<27} {r['seconds']:7.1f} s  peak RSS {r['peak_rss_mib']:6,} MiB  "
              f"max rel. error {r['max_rel_error']:.3%}{more}{what}", file=sys.stderr)  # fmt: skip

    try:
        log = tmp / "log"
        result = {"log": simulate_log(log, args.sessions, context=args.context)}
        print(f"[scale] log: {json.dumps(result['log'])}", file=sys.stderr)
        for m in args.methods:
            for ctx in runs:
                name = f"{m} per device" if ctx else m
                result[name] = r = run_cli(str(log), m, tmp / f"{m}.json", context=ctx)
                report(name, r, "")
        if args.em_sessions:
            parts = -(-min(args.em_sessions, args.sessions) // PART_SESSIONS)
            em_log = tmp / "em_log"
            em_log.mkdir()
            for f in sorted(log.glob("*.parquet"))[:parts]:
                os.link(f, em_log / f.name)  # the first sessions, without a copy
            for ctx in runs:
                name = "em per device" if ctx else "em"
                result[name] = r = run_cli(str(em_log), "em", tmp / "em.json", context=ctx)
                r["sessions"] = parts * PART_SESSIONS
                report(name, r, f" ({r['sessions']:,} sessions, 100 bootstrap replicates)")
    finally:
        if args.keep:
            print(f"[scale] kept {tmp}", file=sys.stderr)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
