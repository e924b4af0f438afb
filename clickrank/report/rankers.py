"""Trained rankers, offline evaluation and paired comparisons: reading and section.

The paired comparisons render from :class:`~clickrank.evaluation.ComparisonResult`
rebuilt from their dicts (``from_dict``), so the schema is the class.
"""

from __future__ import annotations

from ._format import (
    _DETERMINISTIC,
    _f,
    _headline,
    _level,
    _metric_rows,
    _name,
    _p,
    _pct,
    _table,
)
from .clicks import _log


def _folds(lm: dict) -> str:
    """The folds of the run's selections: the config's, else each learner's own."""
    from ..specs import CLICK_RANKER_SELECTION, LAMBDAMART_SELECTION

    if "folds" in lm:
        return f"{lm['folds']}-fold"
    return (f"{LAMBDAMART_SELECTION['folds']}-fold ({CLICK_RANKER_SELECTION['folds']}-fold for "
            "the default target's members)")  # fmt: skip


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
    out += _reading_paired(results)
    out += _reading_skip_above(results, val)
    return out


def _significant(c) -> bool:
    """Both paired tests reject at the comparison's level (the report's one rule)."""
    return c.t_p_value < c.alpha and c.randomization_p_value < c.alpha


def _reading_paired(results: dict) -> list[str]:
    """One sentence over the paired tests on the headline metric (the table is below it)."""
    ev = results["evaluation"]
    m = _headline(results)
    tests = [c for c in _comparisons(ev) if c.metric == m]
    if not tests:
        return []
    sig = [c for c in tests if _significant(c)]
    parts = []
    for c in sig:
        hi, lo = (c.a, c.b) if c.diff > 0 else (c.b, c.a)
        parts.append(f"{_name(hi)} beats {_name(lo)} by {abs(c.diff):.3f}")
    ns = [f"{_name(c.a)} vs {_name(c.b)} ({c.diff:+.3f})" for c in tests if not _significant(c)]
    text = (
        f"Paired tests on {m} over the same {tests[0].n_queries} test queries (table "
        f"below): {len(sig)} of {len(tests)} differences are significant at "
        f"{_level(tests[0].alpha)}"
    )
    if parts:
        text += ": " + "; ".join(parts)
    if ns:
        text += ("; " if parts else ": ") + "not significant at this level: " + "; ".join(ns)
    return [text + "."]


def _paired_table(results: dict) -> list[str]:
    """The paired tests on the headline metric, one row each (rendered after the reading)."""
    ev = results["evaluation"]
    m = _headline(results)
    tests = [c for c in _comparisons(ev) if c.metric == m]
    if not tests:
        return []
    level = _level(tests[0].alpha)
    rows = []
    for c in tests:
        better = _name(c.a) if c.diff > 0 else _name(c.b)
        rows.append(
            [
                _name(c.a),
                _name(c.b),
                f"{c.diff:+.3f} [{c.t_ci[0]:+.3f}, {c.t_ci[1]:+.3f}]",
                _p(c.t_p_value),
                _p(c.randomization_p_value),
                f"{better} is better" if _significant(c) else "not significant",
            ]
        )
    return [
        f"Paired tests on {m}, A − B over the same {tests[0].n_queries} test queries; "
        "significant = both the t-test and the sign-flip randomization test reject at "
        f"{level} (every metric: *Paired comparisons* below).",
        "",
        _table(["A", "B", f"A − B [{level} CI]", "t-test p", "randomization p", "verdict"], rows),
        "",
    ]


def _reading_skip_above(results: dict, val) -> list[str]:
    m = _headline(results)
    out = []
    sa = _log(results).skip_above
    policy = results["production"]["policy"]
    untied = sa.agree + sa.invert
    inv = f"{_pct(sa.invert / untied)} of the {untied:,} untied preferences" if untied else ""
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


def _comparisons(evaluation: dict) -> list:
    """The paired comparisons of the run as :class:`~clickrank.evaluation.ComparisonResult`."""
    from ..evaluation import ComparisonResult

    return [ComparisonResult.from_dict(c) for c in evaluation["comparisons"]]


def _offline_significant(results: dict, a: str, b: str, metric: str) -> bool | None:
    """Whether the paired offline test of a vs b (either order) rejects; None if not run."""
    for c in _comparisons(results["evaluation"]):
        if c.metric == metric and {c.a, c.b} == {a, b}:
            return _significant(c)
    return None


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


def _safety_table(results: dict) -> list[str]:
    """Each click model's counterfactual gain over the production ranker, before deployment.

    Read from the ``vs_safe`` / ``vs_logged`` records the train stage keeps
    (:class:`clickrank.ClickRanker`'s safety check); none for older results.
    """
    rows = []
    for name, model in results.get("models", {}).items():
        c = model.get("vs_safe") or model.get("vs_logged")
        if c is None:
            continue
        sure = "yes" if c["lower"] > 0 else "**no**"
        choice = f" (chose {model['choice']})" if name == "default" else ""
        rows.append([f"{name}{choice}", c["b"], f"{c['gain']:+.4f}", f"{c['se']:.4f}",
                     f"{c['lower']:+.4f}", sure])  # fmt: skip
    if not rows:
        return []
    conf = next(m for m in results["models"].values() if m.get("vs_safe") or m.get("vs_logged"))
    level = (conf.get("vs_safe") or conf.get("vs_logged"))["confidence"]
    src = results["models"].get("default", {}).get("propensities")
    source = [] if not src else [
        f"The default's propensities: {src['method'] or 'none'} ({src['reason']}; "
        f"{src['guarantee']}; docs/logs.md).", ""]  # fmt: skip
    return [
        "### Safety check before deployment",
        "",
        "What could be known without labels: each click model's counterfactual gain in DCG@k "
        "per session over the ranker that logged the clicks (`logging`: the production "
        "ranker), from out-of-fold rankings of the training queries restricted to the "
        f"documents the log shows, with a one-sided {level:.0%} lower bound over queries "
        "(docs/default-learner.md). `default` offers a model only "
        "when its bound is above 0.",
        "",
        _table(
            ["model", "against", "gain", "SE", f"{level:.0%} lower bound", "sure better"], rows
        ),  # fmt: skip
        "",
        *source,
    ]


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
            f"{_folds(lm)} cross-validation by query on a counterfactual "
            f"({lm['validation']}) estimate of DCG from held-out clicks, then a refit on "
            "all training queries (from 2·10⁵ documents the default target's members average "
            "their fold models instead; the oracle is chosen on its labels' NDCG). See "
            'docs/lambdamart.md, "Model selection without labels".',
            "",
        ]
    out += _safety_table(results)
    if ev["comparisons"]:
        crow = [
            [
                c.a,
                c.b,
                c.metric,
                f"{c.diff:+.4f}",
                f"[{c.t_ci[0]:+.4f}, {c.t_ci[1]:+.4f}]",
                f"[{c.bootstrap_ci[0]:+.4f}, {c.bootstrap_ci[1]:+.4f}]",
                _p(c.t_p_value),
                _p(c.randomization_p_value),
                f"{c.cohen_dz:+.2f}",
            ]
            for c in _comparisons(ev)
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
