"""The learning curve: reading and section."""

from __future__ import annotations

from ._format import _f, _table


def _reading_curve(results: dict) -> list[str]:
    lc = results.get("learning_curve") or {}
    rows = [r for r in lc.get("rows", []) if r["sessions"] is not None]
    by: dict[str, dict[int, dict]] = {}
    for r in rows:
        by.setdefault(r["method"], {})[r["sessions"]] = r
    if "ips" not in by or "naive" not in by:
        return []
    common = sorted(set(by["ips"]) & set(by["naive"]))
    if len(common) < 2:
        return []
    n0, n1 = common[0], common[-1]
    i0, i1, v0, v1 = (
        by["ips"][n0]["mean"],
        by["ips"][n1]["mean"],
        by["naive"][n0]["mean"],
        by["naive"][n1]["mean"],
    )
    g0, g1 = i0 - v0, i1 - v1
    text = (
        f"Learning curve ({lc['metric']}): with {n0:,} sessions IPS scores {_f(i0)} and naive "
        f"{_f(v0)}; with {n1:,} sessions {_f(i1)} and {_f(v1)}, so the IPS − naive gap "
        f"{'grows' if g1 > g0 else 'shrinks'} from {g0:+.3f} to {g1:+.3f}"
    )
    half = (by["naive"][n1]["upper"] - by["naive"][n1]["lower"]) / 2
    if abs(v1 - v0) <= half:
        text += (
            f"; the naive ranker does not improve with more clicks ({v1 - v0:+.3f}, within "
            "its confidence interval)."
        )
    else:
        text += f"; the naive ranker moves by {v1 - v0:+.3f} with more clicks."
    return [text]


def _section_curve(results: dict) -> list[str]:
    lc = results.get("learning_curve") or {}
    rows = lc.get("rows") or []
    if not rows:
        return []
    methods = list(dict.fromkeys(r["method"] for r in rows if r["sessions"] is not None))
    sizes = sorted({r["sessions"] for r in rows if r["sessions"] is not None})
    cell = {(r["method"], r["sessions"]): r for r in rows}
    body = [
        [
            f"{n:,}",
            *[
                f"{_f(cell[(m, n)]['mean'])} [{_f(cell[(m, n)]['lower'])}, "
                f"{_f(cell[(m, n)]['upper'])}]"
                if (m, n) in cell
                else "–"
                for m in methods
            ],
        ]
        for n in sizes
    ]
    refs = [f"{r['method']} {_f(r['mean'])}" for r in rows if r["sessions"] is None]
    out = [
        "## Learning curve",
        "",
        f"Test {lc['metric']} of rankers trained on the first n sessions of the log "
        f"(propensities re-estimated on each prefix)"
        + (f"; references: {', '.join(refs)}." if refs else "."),
        "",
        _table(["sessions", *methods], body),
        "",
    ]
    if "learning_curve" in results["figures"]:
        out += [f"![Learning curve]({results['figures']['learning_curve']})", ""]
    return out
