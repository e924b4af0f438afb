"""Simulated interleaving and A/B tests: reading and section.

The rows of ``results["interleaving"]`` are :meth:`InterleavingResult.to_dict
<clickrank.online.InterleavingResult.to_dict>` dicts (with the pair ``a``, ``b`` and
an ``ab`` :class:`~clickrank.online.ABResult` dict); the section rebuilds the typed
results with ``from_dict`` and renders from them, so the schema is the classes'.
"""

from __future__ import annotations

from ._format import _f, _headline, _metric_rows, _name, _p, _pct, _peq, _table
from .rankers import _offline_significant


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


def _section_interleaving(results: dict) -> list[str]:
    exps = results["interleaving"]
    if not exps:
        return []
    from ..online import ABResult, InterleavingResult

    typed = [(e["a"], e["b"], InterleavingResult.from_dict(e)) for e in exps]
    rows = []
    for a, b, r in typed:
        ci = r.conf_int().row(0, named=True)
        rows.append(
            [
                a,
                b,
                r.method,
                f"{r.n:,}",
                f"{r.wins:,}",
                f"{r.losses:,}",
                f"{r.ties:,}",
                f"{r.delta:+.4f} [{ci['lower']:+.4f}, {ci['upper']:+.4f}]",
                _p(r.p_value),
                r.winner,
            ]
        )
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
            for metric, v in ABResult.from_dict(e["ab"]).table.items():
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
