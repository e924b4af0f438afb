"""Compare a performance record (``perf_record.py``'s JSON) with its targets; print the table.

Run ``python3 benchmarks/check_perf.py [benchmarks/perf_record.json]``. Standard library
only and no benchmark is run, so CI calls it on the committed record in well under a
second. A ratio above its target is reported (``over``); the check fails (exit 1) only
when a ratio is more than twice its target, because shared machines are noisy. Figures
whose work is known to be unfinished carry ``open`` (the reason, from
``perf_record.OPEN``): they are printed with it and do not fail. Coverage entries
(smallest and largest coverage per cell) are printed and never fail.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DEFAULT = Path(__file__).resolve().parent / "perf_record.json"


def check(record: dict) -> tuple[list[str], list[str]]:
    """(table lines, failures) of a record."""
    lines = [f"{'figure':<36} {'value':>14} {'target':>12}  status", "-" * 72]
    failures = []
    for name, fig in sorted(record.get("figures", {}).items()):
        if "ratio" in fig:
            ratio, target = float(fig["ratio"]), float(fig["target"])
            status = "ok" if ratio <= target else "over"
            if ratio > target and fig.get("open"):
                status = f"open: {fig['open']}"
            elif ratio > 2 * target:
                status = "FAIL (> 2x target)"
                failures.append(f"{name}: {ratio:.2f}x against a target of {target:g}x")
            lines.append(f"{name:<36} {ratio:>13.2f}x {'<= ' + format(target, 'g') + 'x':>12}  "
                         f"{status}")  # fmt: skip
        elif "min" in fig:
            lo, hi = fig["target"]
            inside = lo <= fig["min"] and fig["max"] <= hi
            span = f"{lo:g}-{hi:g}"
            verdict = "ok" if inside else "outside"
            lines.append(f"{name:<36} {fig['min']:>6.3f}-{fig['max']:.3f} {span:>12}  "
                         f"{verdict} ({fig.get('logs', '?')} logs)")  # fmt: skip
    return lines, failures


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    if not path.is_file():
        print(f"check_perf: no record at {path} (python3 tasks.py bench writes one)")
        return 0
    lines, failures = check(json.loads(path.read_text()))
    print(f"performance record {path.name}:")
    print("\n".join(lines))
    if failures:
        print("\nregressions beyond 2x the target:\n  " + "\n  ".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
