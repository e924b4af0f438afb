"""Peak memory of ``load_letor`` on a large LETOR file, against the file's size.

Builds, in a temporary folder, ``--copies`` copies of MQ2008 Fold1/train.txt
(each copy with its own query ids, so queries stay contiguous), then loads it
in a child process and reports the child's peak RSS (``getrusage`` of the
children, as ``/usr/bin/time -v`` reports it), the peak of a child that only
imports clickrank, and the ratio of the difference to the file size.
Nothing is written outside the temporary folder.

    python benchmarks/bench_letor_memory.py --copies 34
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[2] / "shared/data/letor4_mq2008/Fold1/train.txt"
_QID = re.compile(rb"qid:(\S+)")


def build(source: Path, dest: Path, copies: int) -> int:
    text = source.read_bytes()
    with open(dest, "wb") as fh:
        for c in range(copies):
            fh.write(_QID.sub(lambda m, c=c: b"qid:%d%s" % (c + 1, m.group(1)), text))
    return dest.stat().st_size


def peak_rss(code: str) -> tuple[int, float]:
    """Peak RSS (bytes) and wall time of ``python -c code`` in a fresh child."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    # RUSAGE_CHILDREN keeps the largest child so far: run children in increasing order
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=DEFAULT)
    ap.add_argument("--copies", type=int, default=34)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.txt"
        size = build(args.source, big, args.copies)
        base, _ = peak_rss("import clickrank.datasets, numpy, polars")
        peak, wall = peak_rss(
            "from clickrank.datasets import load_letor\n"
            f"d = load_letor({str(big)!r})\n"
            "print(f'{d.n_docs:,} documents, {d.n_queries:,} queries, "
            "{d.X.shape[1]} features', flush=True)"
        )
    print(
        f"file {size / 2**20:,.1f} MiB ({args.copies} x {args.source.name}): load_letor "
        f"peak RSS {peak / 2**20:,.0f} MiB ({(peak - base) / 2**20:,.0f} MiB above the "
        f"{base / 2**20:,.0f} MiB of the imports) = {(peak - base) / size:.2f} x the file, "
        f"{wall:.1f} s"
    )


if __name__ == "__main__":
    main()
