"""Propensities and fitted click models: their reading and sections.

The table of estimates renders from :class:`~clickrank.propensity.Propensities`
rebuilt from the run's dicts (``from_dict``).
"""

from __future__ import annotations

import math
from typing import Any

from ._format import _f, _level, _pct, _table


def _coverage(est: dict, truth: list[float]) -> tuple[int, int, float, int] | None:
    theta, lo, hi = est["theta"], est["lower"], est["upper"]
    k = min(len(theta), len(truth))
    t1 = truth[0]
    covered = n = 0
    worst, worst_p = -1.0, 0
    for i in range(k):
        if theta[i] is None or lo[i] is None or hi[i] is None:
            continue
        t = truth[i] if est.get("absolute") else truth[i] / t1
        if i == 0 and not est.get("absolute"):
            continue  # the reference position is 1 by construction
        n += 1
        covered += lo[i] <= t <= hi[i]
        err = abs(theta[i] - t) / t
        if err > worst:
            worst, worst_p = err, i + 1
    return (covered, n, worst, worst_p) if n else None


def _sessions_used(results: dict, method: str, est: dict) -> str:
    """The estimate's session count, and which sessions those are when the log tells."""
    n = est["n_sessions"]
    by = (results.get("log") or {}).get("sessions_by_intervention") or {}
    kind = {"swap": "swap", "randpair": "randpair"}.get(method)
    none = by.get("none", 0) + by.get("", 0)
    if kind and by.get(kind) and n == by[kind] + none:
        return (
            f"{n:,} sessions: the {by[kind]:,} {kind} sessions compared with the {none:,} "
            "sessions without intervention, which show the same lists unswapped"
        )
    return f"{n:,} sessions"


def _reading_propensities(results: dict) -> list[str]:
    prop = results["propensities"]
    out = []
    truth = prop.get("truth")
    level = _level(prop["alpha"])
    for method, est in prop["estimates"].items():
        head = f"The {method} estimate of θ ({_sessions_used(results, method, est)})"
        if est.get("contexts"):
            out.append(_reading_contexts(method, est["contexts"], prop))
        if truth is None:
            if not prop.get("truth_contexts"):
                out.append(f"{head} cannot be checked: the click model has no true θ.")
            continue
        cov = _coverage(est, truth)
        if cov is None:
            out.append(f"{head} identifies no position beyond the reference.")
            continue
        covered, n, worst, worst_p = cov
        text = (
            f"{head} covers the true θ with its {level} CI at {covered} of {n} estimated "
            f"positions; the largest relative error is {_pct(worst)} (position {worst_p})"
        )
        expected = n * prop["alpha"]
        misses = n - covered
        if misses > max(1.0, expected + 2 * math.sqrt(expected * (1 - prop["alpha"]))):
            text += "; that is more misses than an interval at this level should give."
        else:
            text += "."
        out.append(text)
    return out


def _reading_contexts(method: str, ctx: dict, prop: dict) -> str:
    """The homogeneity test in words, and how often the contexts' intervals cover their
    true curves (when the run knows them)."""
    from ..propensity import ContextCurves, Propensities

    curves = ContextCurves.from_dict(ctx, Propensities)
    text = f"By {', '.join(curves.columns)}, the {method} estimate says: {curves.verdict()}."
    truth = prop.get("truth_contexts") or {}
    covered = n = 0
    bounds = curves.bounds(prop["alpha"])
    for i, values in enumerate(curves.values):
        true = truth.get(values[0]) if len(values) == 1 else None
        for k in range(1, min(len(true or []), curves.theta.shape[1])):
            lo, hi = bounds[i, k]
            if math.isfinite(lo) and math.isfinite(hi):
                n += 1
                covered += lo <= true[k] / true[0] <= hi
    if n:
        text += (f" Each context's {_level(prop['alpha'])} interval covers its true θ at "
                 f"{covered} of {n} positions.")  # fmt: skip
    return text


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _section_contexts(prop: dict) -> list[str]:
    """θ by context: each context's curve with its interval (and truth), per estimate."""
    from ..propensity import ContextCurves, Propensities

    level = _level(prop["alpha"])
    truth = prop.get("truth_contexts") or {}
    out = []
    for method, est in prop["estimates"].items():
        if not est.get("contexts"):
            continue
        curves = ContextCurves.from_dict(est["contexts"], Propensities)
        bounds = curves.bounds(prop["alpha"])
        rows = []
        for k in range(curves.theta.shape[1]):
            row: list[Any] = [k + 1]
            for i, values in enumerate(curves.values):
                t, (lo, hi) = curves.theta[i, k], bounds[i, k]
                if not math.isfinite(t):
                    row.append("not identified")
                    continue
                cell = f"{_f(float(t))} [{_f(float(lo))}, {_f(float(hi))}]"
                true = truth.get(values[0]) if len(values) == 1 else None
                if true is not None and 0 < k < len(true):
                    cell += f" (true {_f(true[k] / true[0])})"
                row.append(cell)
            rows.append(row)
        out += [
            f"### θ by {', '.join(curves.columns)} ({method})",
            "",
            f"Each context's curve, shrunk toward the common one, with its {level} interval. "
            f"{_sentence(curves.verdict(prop['alpha']))}.",
            "",
            _table(["position", *(f"{lab} θ̂ [{level} CI]" for lab in curves.labels)], rows),
            "",
        ]
    return out


def _estimates(prop: dict) -> dict:
    """The run's estimates as :class:`~clickrank.propensity.Propensities` (``from_dict``)."""
    from ..propensity import Propensities

    return {m: Propensities.from_dict(e) for m, e in prop["estimates"].items()}


def _section_propensities(results: dict) -> list[str]:
    prop = results["propensities"]
    if not prop["estimates"]:
        return []
    level = _level(prop["alpha"])
    truth = prop.get("truth")
    ests = _estimates(prop)
    methods = list(ests)
    cis = {
        m: p.conf_int(prop["alpha"]).select("lower", "upper").to_numpy() for m, p in ests.items()
    }
    k = max(p.K for p in ests.values())
    rows = []
    for i in range(k):
        row: list[Any] = [i + 1]
        if truth is not None:
            row.append(_f(truth[i] / truth[0]) if i < len(truth) else "–")
        for m, p in ests.items():
            if i >= p.K or not p.identified[i]:
                row.append("not identified")
                continue
            lo, hi = (float(x) for x in cis[m][i])
            cell = f"{_f(float(p.theta[i]))} [{_f(lo)}, {_f(hi)}]"
            if truth is not None and i < len(truth) and i > 0:
                t = truth[i] if p.absolute else truth[i] / truth[0]
                cell += " ✓" if lo <= t <= hi else " ✗"
            row.append(cell)
        rows.append(row)
    headers = [
        "position",
        *(["true θ/θ₁"] if truth is not None else []),
        *[f"{m} θ̂ [{level} CI]" for m in methods],
    ]
    out = [
        "## Position bias: estimated vs true propensities",
        "",
        f"θ relative to position 1; ✓ = the {level} interval covers the truth. The `ips` "
        f"target uses the **{prop['use']}** estimate.",
        "",
        _table(headers, rows),
        "",
    ]
    for m, p in ests.items():
        for w in p.warnings:
            out.append(f"- {m}: {w}")
    out += _section_contexts(prop)
    if "propensities_by_context" in results["figures"]:
        out += [f"![θ by context]({results['figures']['propensities_by_context']})", ""]
    if "propensities" in results["figures"]:
        out += [
            "",
            f"![Estimated vs true propensities]({results['figures']['propensities']})",
            "",
        ]
    return out


def _section_click_fit(results: dict) -> list[str]:
    cf = results.get("click_fit") or {}
    if not cf.get("models"):
        return []
    where = (
        "training sessions (in-sample)"
        if cf["in_sample"]
        else f"{cf['n_test']:,} held-out sessions"
    )
    rows = [
        [
            ("**" + m["model"] + "**") if m["model"] == cf["best"] else m["model"],
            f"{m['parameters']:,}",
            _f(m["log_likelihood_per_session"], 4),
            _f(m["perplexity"], 4),
            _f(m["conditional_perplexity"], 4),
            _f(m["ctr_rmse"], 4),
            f"{m['seconds']:.2f}",
        ]
        for m in cf["models"]
    ]
    rec = cf["recommendation"]
    out = [
        "## Which click model describes the users?",
        "",
        f"Click models fitted by EM on {cf['n_train']:,} sessions of the log and evaluated on "
        f"{where} (perplexity: 1 = perfect, 2 = a coin flip; conditional perplexity scores "
        "each click given the clicks above it).",
        "",
        _table(
            [
                "model",
                "parameters",
                "log-likelihood / session",
                "perplexity",
                "conditional perplexity",
                "CTR RMSE",
                "seconds",
            ],
            rows,
        ),
        "",
        f"Best: **{rec['model']}** ({rec['reason']}); the correction it calls for: "
        f"`{rec['correction']}` (in Python `{rec['call']}`, with `fit` the fitted "
        f"{rec['model']}). From the command line:",
        "",
        "```bash",
        *rec.get("command", "").splitlines(),
        "```",
        "",
    ]
    if rec.get("note"):
        out += [f"Note: {rec['note']}.", ""]
    if rec.get("warning"):
        out += [f"**Warning**: {rec['warning']}", ""]
    if cf.get("figure"):
        out += [f"![Perplexity by rank]({cf['figure']})", ""]
    return out
