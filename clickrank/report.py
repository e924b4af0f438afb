r"""The bias-analysis report of an experiment: ``report.md`` and ``summary.json``.

:func:`write_report` renders the results dict that
:func:`clickrank.experiment.run_experiment` assembles (the content of
``summary.json``) as a GitHub-flavoured markdown report with relative links to
the PNG figures, and writes both files atomically.

:func:`reading` turns the numbers into a short plain-language reading. Every
sentence is computed from the results and its wording follows them: which
ranker is better, whether a difference is significant, whether an interval
covers the truth. Nothing in it is a hard-coded claim.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._io import atomic_write_json, atomic_write_text

__all__ = ["write_report", "render_report", "reading"]

_NAMES = {
    "ips": "IPS",
    "ips-true": "IPS with the true θ",
    "naive": "naive",
    "skip-above": "skip-above",
    "skip-above-ips": "IPS-weighted skip-above",
    "oracle": "oracle",
    "production": "the logging (production) ranker",
    "unbiased-lambdamart": "Unbiased LambdaMART",
    "prs-pairs": "propensity-ratio pairs",
    "ips-pairs": "IPS-weighted rank pairs",
}
_DETERMINISTIC = ("production", "oracle")


def _name(r: str) -> str:
    return _NAMES.get(r, r)


def _f(x: Any, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}f}"


def _p(p: Any) -> str:
    if p is None:
        return "–"
    if p == 0:
        return "< 1e-300"
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _peq(p: Any) -> str:
    """``p = 0.012`` in a sentence (``p < 1e-300`` when it underflows)."""
    return "p < 1e-300" if p == 0 else f"p = {_p(p)}"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def _metric_rows(results: dict) -> dict[tuple[str, str], dict]:
    return {(r["ranker"], r["metric"]): r for r in results["evaluation"]["table"]}


def _headline(results: dict) -> str:
    return results["evaluation"]["metrics"][0]


def _level(alpha: float) -> str:
    return f"{100 * (1 - alpha):g}%"


# -- the reading -----------------------------------------------------------------------------


def _reading_clicks(results: dict) -> list[str]:
    rows = results["log"]["ctr_by_position"]
    if len(rows) < 2:
        return []
    first, last = rows[0], rows[-1]
    k = last["position"]
    c1, ck = first["ctr"], last["ctr"]
    a1, ak = first.get("mean_click_given_examined"), last.get("mean_click_given_examined")
    if not c1:
        return [f"The log has no clicks at position 1 ({first['impressions']:,} impressions)."]
    if not ck:
        return [
            f"Nobody clicked at position {k} ({last['impressions']:,} impressions), against a "
            f"CTR of {_f(c1)} at position 1."
        ]
    ctr_ratio = c1 / ck
    text = (
        f"Observed CTR at position {k} is {ctr_ratio:.1f}× lower than at position 1 "
        f"({_f(c1)} vs {_f(ck)})"
    )
    if a1 and ak:
        rel_ratio = a1 / ak
        text += (
            f", while the mean click probability once examined of the documents shown there "
            f"{'falls only' if rel_ratio < ctr_ratio else 'falls'} {rel_ratio:.1f}× "
            f"({_f(a1)} vs {_f(ak)})"
        )
        if ctr_ratio > 1.25 * rel_ratio:
            text += ": most of the fall is position bias, not relevance."
        elif rel_ratio > 1.25 * ctr_ratio:
            text += ": the CTR falls less than relevance does."
        else:
            text += (
                ": the CTR falls about as fast as relevance, so the clicks show little "
                "position bias."
            )
    else:
        text += "."
    return [text]


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


def _reading_propensities(results: dict) -> list[str]:
    prop = results["propensities"]
    out = []
    truth = prop.get("truth")
    level = _level(prop["alpha"])
    for method, est in prop["estimates"].items():
        head = f"The {method} estimate of θ ({est['n_sessions']:,} sessions)"
        if truth is None:
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


def _reading_rankers(results: dict) -> list[str]:
    ev = results["evaluation"]
    m = _headline(results)
    rows = _metric_rows(results)
    level = _level(ev["alpha"])
    out = []

    def val(r: str) -> float | None:
        return rows[(r, m)]["mean"] if (r, m) in rows else None

    naive, ips, oracle = val("naive"), val("ips"), val("oracle")
    if naive is not None and oracle is not None and ips is not None:
        gap = oracle - naive
        r = rows[("ips", m)]
        ci = f"{_f(ips)} [{_f(r['ci_low'])}, {_f(r['ci_high'])}]"
        if gap > 0:
            closed = (ips - naive) / gap
            if closed >= 1:
                out.append(
                    f"On {m}, IPS ({ci}) reaches the oracle ({_f(oracle)}): it closes the "
                    f"whole gap from naive ({_f(naive)})."
                )
            elif closed > 0:
                out.append(
                    f"IPS closes {_pct(closed)} of the gap between naive ({_f(naive)}) and "
                    f"oracle ({_f(oracle)}) on {m}: {ci} ({level} CI)."
                )
            else:
                out.append(
                    f"IPS ({ci}) does not improve on naive ({_f(naive)}) on {m}; the "
                    f"oracle reaches {_f(oracle)}."
                )
        else:
            out.append(
                f"Naive ({_f(naive)}) already matches or beats the oracle ({_f(oracle)}) "
                f"on {m}: there is no gap for IPS ({ci}) to close."
            )
    for c in ev["comparisons"]:
        if c["metric"] != m:
            continue
        sig = c["t_p_value"] < c["alpha"] and c["randomization_p_value"] < c["alpha"]
        better = _name(c["a"]) if c["diff"] > 0 else _name(c["b"])
        verdict = f"significant: {better} is better" if sig else "not significant at this level"
        out.append(
            f"Paired test on {m}, {_name(c['a'])} − {_name(c['b'])}: {c['diff']:+.3f} "
            f"({level} CI [{c['t_ci'][0]:+.3f}, {c['t_ci'][1]:+.3f}]; t-test "
            f"{_peq(c['t_p_value'])}, randomization {_peq(c['randomization_p_value'])}, "
            f"{c['n_queries']} queries): {verdict}."
        )
    out += _reading_skip_above(results, val)
    return out


def _reading_skip_above(results: dict, val) -> list[str]:
    m = _headline(results)
    out = []
    sa = results["log"]["skip_above"]
    policy = results["production"]["policy"]
    untied = sa["agree"] + sa["invert"]
    inv = f"{_pct(sa['invert'] / untied)} of the {untied:,} untied preferences" if untied else ""
    for name in ("skip-above", "skip-above-ips"):
        s, prod = val(name), val("production")
        if s is None or prod is None:
            continue
        if s < prod:
            why = (
                "with a deterministic logger every skip-above preference puts a lower-ranked "
                "result over a higher-ranked one, so a learner fitted to them learns to "
                "reverse the logging ranker (a known bias of click > skip-above, Joachims et "
                "al. 2005)"
                if policy in _DETERMINISTIC
                else "its preferences are biased towards results the logger ranked low"
            )
            out.append(
                f"{_name(name).capitalize()} scores {_f(s)} on {m}, below even the "
                f"logging ranker ({_f(prod)}): {why}"
                + (f"; {inv} contradict the true labels." if inv else ".")
            )
        else:
            out.append(
                f"{_name(name).capitalize()} scores {_f(s)} on {m}, above the logging "
                f"ranker ({_f(prod)})" + (f"; {inv} contradict the true labels." if inv else ".")
            )
    return out


def _offline_significant(results: dict, a: str, b: str, metric: str) -> bool | None:
    """Whether the paired offline test of a vs b (either order) rejects; None if not run."""
    for c in results["evaluation"]["comparisons"]:
        if c["metric"] == metric and {c["a"], c["b"]} == {a, b}:
            return c["t_p_value"] < c["alpha"] and c["randomization_p_value"] < c["alpha"]
    return None


def _reading_interleaving(results: dict) -> list[str]:
    out = []
    rows = _metric_rows(results)
    m = _headline(results)
    for e in results["interleaving"]:
        a, b = _name(e["a"]), _name(e["b"])
        decided = e["wins"] + e["losses"]
        share = f"; A wins {_pct(e['wins'] / decided)} of the non-tied ones" if decided else ""
        if e["winner"] == "A":
            verdict = f"users prefer {a}"
        elif e["winner"] == "B":
            verdict = f"users prefer {b}"
        else:
            verdict = "no significant preference"
        text = (
            f"{e['method'].capitalize()} interleaving, A = {a} vs B = {b}, over "
            f"{e['n']:,} simulated impressions: Δ = {e['delta']:+.4f} "
            f"[{e['ci_low']:+.4f}, {e['ci_high']:+.4f}]{share}; sign test "
            f"{_peq(e['p_value'])}: {verdict}"
        )
        if (e["a"], m) in rows and (e["b"], m) in rows and e["winner"] != "none":
            diff = rows[(e["a"], m)]["mean"] - rows[(e["b"], m)]["mean"]
            agree = (diff > 0) == (e["winner"] == "A")
            offline = _offline_significant(results, e["a"], e["b"], m)
            qual = "" if offline is None else (" significant" if offline else " (not significant)")
            text += (
                f", which {'agrees' if agree else 'disagrees'} in direction with the"
                f"{qual} offline {m} difference ({diff:+.3f})"
            )
        out.append(text + ".")
        ab = e.get("ab")
        if ab:
            clicks = ab["table"]["clicks"]
            sig = clicks["p_value"] < ab["alpha"]
            both = (
                "both detect the difference"
                if sig and e["winner"] != "none"
                else "only interleaving detects it"
                if e["winner"] != "none"
                else "only the A/B test detects it"
                if sig
                else "neither detects it"
            )
            out.append(
                f"An A/B test on the same traffic ({ab['n_a']:,} vs {ab['n_b']:,} "
                f"impressions) finds clicks per impression {clicks['diff']:+.4f} "
                f"({_peq(clicks['p_value'])}): {both}."
            )
    return out


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


def reading(results: dict) -> list[str]:
    """Plain-language sentences computed from the results (conditional wording)."""
    return [
        *_reading_clicks(results),
        *_reading_propensities(results),
        *_reading_rankers(results),
        *_reading_interleaving(results),
        *_reading_curve(results),
    ]


# -- markdown ----------------------------------------------------------------------------------


def _section_data(results: dict) -> list[str]:
    d, log = results["data"], results["log"]
    rows = []
    for part, p in d["parts"].items():
        labels = ", ".join(f"{float(k):g}: {v:,}" for k, v in p["labels"].items())
        rows.append([part, f"{p['queries']:,}", f"{p['docs']:,}", labels])
    iv = ", ".join(f"{k}: {v:,}" for k, v in log["sessions_by_intervention"].items())
    prod = results["production"]
    trained = (
        f", trained on {prod['trained_on_queries']} training queries"
        if prod.get("trained_on_queries")
        else ""
    )
    q = prod.get("quality")
    if q and q["trained_on"]:
        held, every = q["held_out"], q["all"]
        metric = q["metric"].upper()
        trained = (
            f", trained on {q['trained_on']} of the {q['n_queries']} training queries "
            f"({metric} {_f(held['mean'])} on the other {held['queries']}, "
            f"{_f(every['mean'])} on all of them"
            + (
                f"; {every['n_empty']} without a relevant document skipped"
                if every["n_empty"]
                else ""
            )
            + "; on the test queries: the *production* row of the tables below)"
        )
    relevance = (
        f" {log['relevance'][0].upper()}{log['relevance'][1:]}." if log.get("relevance") else ""
    )
    return [
        "## Data and click log",
        "",
        f"Data: **{d['name'] or d['source']}** ({d['n_features']} features).",
        "",
        _table(["part", "queries", "documents", "labels (grade: count)"], rows),
        "",
        f"Logging policy: **{prod['policy']}**{trained}. Click model: `{log['click_model']}`."
        f"{relevance}",
        "",
        f"The log (`{log['path']}`) has {log['sessions']:,} sessions, {log['impressions']:,} "
        f"displayed results and {log['clicks']:,} clicks "
        f"({log['clicks'] / max(log['sessions'], 1):.3f} per session); sessions by "
        f"intervention: {iv}.",
        "",
    ]


def _section_ctr(results: dict) -> list[str]:
    log = results["log"]
    view = log["ctr_view"]
    rows = [
        [
            r["position"],
            f"{r['impressions']:,}",
            f"{r['clicks']:,}",
            _f(r["ctr"], 4),
            _f(r["mean_label"], 2),
            _f(r["mean_click_given_examined"]),
            _f(r["true_theta"]),
        ]
        for r in log["ctr_by_position"]
    ]
    out = [
        "### Clicks by position",
        "",
        f"Sessions without intervention ({view})." if view != "all" else "All sessions.",
        "",
        _table(
            [
                "position",
                "impressions",
                "clicks",
                "CTR",
                "mean label",
                "P(click \\| examined)",
                "true θ",
            ],
            rows,
        ),
        "",
    ]
    for key, caption in (
        ("ctr_by_position", "Observed CTR, IPS-corrected CTR and the true relevance per position"),
        ("click_heatmap", "CTR per position and relevance label"),
    ):
        if key in results["figures"]:
            out += [f"![{caption}]({results['figures'][key]})", "", f"*{caption}.*", ""]
    return out


def _section_propensities(results: dict) -> list[str]:
    prop = results["propensities"]
    if not prop["estimates"]:
        return []
    level = _level(prop["alpha"])
    truth = prop.get("truth")
    methods = list(prop["estimates"])
    k = max(len(e["theta"]) for e in prop["estimates"].values())
    rows = []
    for i in range(k):
        row: list[Any] = [i + 1]
        if truth is not None:
            row.append(_f(truth[i] / truth[0]) if i < len(truth) else "–")
        for m in methods:
            e = prop["estimates"][m]
            if i >= len(e["theta"]) or e["theta"][i] is None:
                row.append("not identified")
                continue
            cell = f"{_f(e['theta'][i])} [{_f(e['lower'][i])}, {_f(e['upper'][i])}]"
            if truth is not None and i < len(truth) and i > 0:
                t = truth[i] if e.get("absolute") else truth[i] / truth[0]
                cell += " ✓" if e["lower"][i] <= t <= e["upper"][i] else " ✗"
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
    for m, e in prop["estimates"].items():
        for w in e.get("warnings", []):
            out.append(f"- {m}: {w}")
    if "propensities" in results["figures"]:
        out += ["", f"![Estimated vs true propensities]({results['figures']['propensities']})", ""]
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
        f"`{rec['correction']}` (`{rec['call']}`).",
        "",
    ]
    if cf.get("figure"):
        out += [f"![Perplexity by rank]({cf['figure']})", ""]
    return out


def _model_cell(model: dict) -> str:
    """Trees and their shape (chosen by the selection when it ran) and the candidate set."""
    shape = ""
    if model.get("num_leaves") is not None:
        depth = model.get("max_depth")
        shape = f" of {model['num_leaves']} leaves" + (
            f", depth {depth}" if depth and depth > 0 else ""
        )
    cand = (model.get("metadata") or {}).get("candidates")
    trees = f"{model['trees']} tree" + ("" if model["trees"] == 1 else "s")
    return f"{trees}{shape}, {model['kind']}" + (f", {cand} candidates" if cand else "")


def _section_rankers(results: dict) -> list[str]:
    ev = results["evaluation"]
    level = _level(ev["alpha"])
    rows = _metric_rows(results)
    body = []
    for r in ev["rankers"]:
        cells = [f"**{r}**" if r == "ips" else r]
        for m in ev["metrics"]:
            x = rows[(r, m)]
            cells.append(f"{_f(x['mean'])} [{_f(x['ci_low'])}, {_f(x['ci_high'])}]")
        model = results["models"].get(r)
        cells.append("logging ranker" if r == "production" else _model_cell(model) if model else "")
        body.append(cells)
    any_row = ev["table"][0]
    out = [
        "## Rankers",
        "",
        f"Test metrics on {ev['n_queries']:,} queries with {level} CIs from "
        f"{ev['n_bootstrap']:,} query-level bootstrap resamples (percentile). Queries without "
        f"a relevant document: empty = `{ev['empty']}` ({any_row['n_empty']} queries"
        + (", excluded)." if ev["empty"] == "skip" else ")."),
        "",
        _table(["ranker", *ev["metrics"], "model"], body),
        "",
    ]
    lm = results.get("config", {}).get("lambdamart", {})
    if lm.get("select"):
        out += [
            f"Every model's tree shape and number of trees were chosen without labels: "
            f"{lm['folds']}-fold cross-validation by query on a counterfactual "
            f"({lm['validation']}) estimate of DCG from held-out clicks, then a refit on "
            "all training queries (the oracle's on its labels' NDCG). See "
            'docs/lambdamart.md, "Model selection without labels".',
            "",
        ]
    if ev["comparisons"]:
        crow = [
            [
                c["a"],
                c["b"],
                c["metric"],
                f"{c['diff']:+.4f}",
                f"[{c['t_ci'][0]:+.4f}, {c['t_ci'][1]:+.4f}]",
                f"[{c['bootstrap_ci'][0]:+.4f}, {c['bootstrap_ci'][1]:+.4f}]",
                _p(c["t_p_value"]),
                _p(c["randomization_p_value"]),
                f"{c['cohen_dz']:+.2f}",
            ]
            for c in ev["comparisons"]
        ]
        out += [
            "### Paired comparisons",
            "",
            "Difference A − B over the same queries: paired t interval, bootstrap interval, "
            "paired t-test, sign-flip randomization test, Cohen's d_z.",
            "",
            _table(
                [
                    "A",
                    "B",
                    "metric",
                    "A − B",
                    f"t {level} CI",
                    f"bootstrap {level} CI",
                    "t-test p",
                    "randomization p",
                    "d_z",
                ],
                crow,
            ),
            "",
        ]
    return out


def _section_interleaving(results: dict) -> list[str]:
    exps = results["interleaving"]
    if not exps:
        return []
    rows = [
        [
            e["a"],
            e["b"],
            e["method"],
            f"{e['n']:,}",
            f"{e['wins']:,}",
            f"{e['losses']:,}",
            f"{e['ties']:,}",
            f"{e['delta']:+.4f} [{e['ci_low']:+.4f}, {e['ci_high']:+.4f}]",
            _p(e["p_value"]),
            e["winner"],
        ]
        for e in exps
    ]
    out = [
        "## Online: interleaving",
        "",
        "Simulated impressions on the test queries with the run's click model. "
        "Δ = (A wins + ties/2)/n − 1/2 (> 0 favours A); exact two-sided sign test on the "
        "non-tied impressions.",
        "",
        _table(
            [
                "A",
                "B",
                "method",
                "impressions",
                "A wins",
                "B wins",
                "ties",
                "Δ [CI]",
                "p",
                "preferred",
            ],
            rows,
        ),
        "",
    ]
    ab_rows = []
    for e in exps:
        if e.get("ab"):
            for metric, v in e["ab"]["table"].items():
                ab_rows.append(
                    [
                        e["a"],
                        e["b"],
                        metric,
                        _f(v["mean_a"], 4),
                        _f(v["mean_b"], 4),
                        f"{v['diff']:+.4f} [{v['ci_low']:+.4f}, {v['ci_high']:+.4f}]",
                        _p(v["p_value"]),
                        v["test"],
                    ]
                )
    if ab_rows:
        out += [
            "A/B test on the same traffic (each impression shows A or B):",
            "",
            _table(["A", "B", "metric", "A", "B", "A − B [CI]", "p", "test"], ab_rows),
            "",
        ]
    return out


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


def _section_figures_more(results: dict) -> list[str]:
    figs = results["figures"]
    out = []
    if "skip_above_bias" in figs:
        sa = results["log"]["skip_above"]
        untied = sa["agree"] + sa["invert"]
        share = f"{_pct(sa['invert'] / untied)} of {untied:,}" if untied else "none"
        out += [
            "## Skip-above preferences",
            "",
            f'{sa["preferences"]:,} preferences "clicked ≻ skipped above" in the log; '
            f"{share} untied ones contradict the true labels. Every one of them puts a "
            "lower-ranked result above a higher-ranked one.",
            "",
            f"![Skip-above preferences against the labels]({figs['skip_above_bias']})",
            "",
        ]
    if "forces" in figs:
        fe = results.get("forces_example") or {}
        where = (
            f" on the top {fe.get('docs')} of test query {fe.get('query')} as ranked by the "
            f"{fe.get('ranker')} model"
            if fe
            else ""
        )
        out += [
            "## LambdaMART forces",
            "",
            f"RankNet vs LambdaRank forces (positive = pushed up){where}.",
            "",
            f"![RankNet vs LambdaRank forces]({figs['forces']})",
            "",
        ]
    return out


def _section_tail(results: dict) -> list[str]:
    out = []
    if results.get("notes"):
        out += ["## Notes", "", *[f"- {n}" for n in results["notes"]], ""]
    origin = results.get("config_origin", "")
    out += [
        "## Configuration",
        "",
        f"Effective configuration (from `{origin}`; hash `{results['config_hash']}`), also "
        "saved as `config.toml` in this folder. Rerun it with "
        "`clickrank run config.toml --out <folder>`.",
        "",
        "```toml",
        _toml(results["config"]).rstrip(),
        "```",
        "",
    ]
    timings = results.get("timings") or {}
    stages = timings.get("stages") or {}
    if stages:
        rows = [
            [
                s,
                f"{v['seconds']:.1f}",
                "computed"
                if not v["reused"]
                else "reused"
                if v.get("computed_seconds") is None
                else f"reused (computed in {v['computed_seconds']:.1f} s)",
            ]
            for s, v in stages.items()
        ]
        out += [
            "## Timings",
            "",
            _table(["stage", "seconds", ""], rows),
            "",
            f"Total {timings.get('total_seconds', 0):.1f} s.",
            "",
        ]
    versions = ", ".join(f"{k} {v}" for k, v in results.get("versions", {}).items() if v)
    out += [f"*Versions: {versions}.*", ""]
    return out


def _toml(config: dict) -> str:
    from .specs import dumps_toml

    return dumps_toml(config)


def render_report(results: dict, *, title: str | None = None) -> str:
    """The markdown text of ``report.md`` for a results dict (see :func:`write_report`)."""
    text = results.get("reading") or reading(results)
    head = title or "clickrank experiment report"
    lines = [
        f"# {head}",
        "",
        f"Generated by clickrank {results['versions']['clickrank']} from "
        f"`{results.get('config_origin', '')}`.",
        "",
        "## Reading",
        "",
        *[f"- {s}" for s in text],
        "",
    ]
    lines += _section_data(results)
    lines += _section_ctr(results)
    lines += _section_propensities(results)
    lines += _section_click_fit(results)
    lines += _section_rankers(results)
    lines += _section_interleaving(results)
    lines += _section_curve(results)
    lines += _section_figures_more(results)
    lines += _section_tail(results)
    return "\n".join(lines)


def write_report(results: dict, out_dir: str | os.PathLike) -> tuple[Path, Path]:
    """Write ``report.md`` and ``summary.json`` into ``out_dir``, atomically.

    Parameters
    ----------
    results : dict
        The experiment's results (as built by
        :func:`clickrank.experiment.run_experiment`): config, data, log,
        propensities, evaluation, interleaving, learning_curve, figures
        (paths relative to ``out_dir``), notes, versions, timings. A missing
        ``reading`` is computed with :func:`reading` and stored in it.

    Returns
    -------
    (Path, Path)
        ``report.md`` and ``summary.json``.
    """
    out = Path(out_dir)
    if "reading" not in results:
        results["reading"] = reading(results)
    title = f"clickrank experiment: {out.resolve().name}"
    report = atomic_write_text(out / "report.md", render_report(results, title=title))
    summary = atomic_write_json(out / "summary.json", results)
    return report, summary
