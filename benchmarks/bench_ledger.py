"""Per-write cost of clickrank's ownership ledger when a folder already lists many files.

Builds, in a temporary folder, a ledger with ``--entries`` files (default 10^5,
the files themselves created empty), then times ``atomic_write_text`` of one
small file into that folder ``--writes`` times, and reports the mean wall
time and the peak RSS growth of the process (``resource.getrusage``).

    python benchmarks/bench_ledger.py --entries 100000 --writes 5
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from clickrank._core._io import LEDGER, atomic_write_text


def build(folder: Path, n: int) -> int:
    files = {}
    for i in range(n):
        name = f"part-{i:07d}.parquet"
        (folder / name).touch()
        st = (folder / name).stat()
        files[name] = {"size": 0, "mtime_ns": st.st_mtime_ns, "blake2b": "0" * 32}
    text = json.dumps({"format": "clickrank.files", "version": 1, "files": files}, indent=1)
    (folder / LEDGER).write_text(text, encoding="utf-8")
    return len(text)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=100_000)
    ap.add_argument("--writes", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        size = build(folder, args.entries)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        for i in range(args.writes):
            atomic_write_text(folder / f"out-{i}.json", "{}\n")
        dt = (time.perf_counter() - t0) / args.writes
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        final = (folder / LEDGER).stat().st_size
    print(
        f"ledger of {args.entries:,} entries ({size / 2**20:.1f} MiB, "
        f"{final / 2**20:.1f} MiB after): {dt * 1000:.0f} ms per write, "
        f"peak RSS growth {(rss1 - rss0) / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
