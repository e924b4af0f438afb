"""The click log: its reading (position bias in the CTR), the data and CTR sections.

``results["log"]`` is a :meth:`LogStats.to_dict <clickrank.clicklog.LogStats.to_dict>`
dict; the sections rebuild the typed result with ``from_dict`` and render from it, so
the schema is the class's.
"""

from __future__ import annotations

from ..clicklog import LogStats
from ._format import _f, _table


def _log(results: dict) -> LogStats:
    """The run's click-log statistics as a :class:`~clickrank.clicklog.LogStats`."""
    return LogStats.from_dict(results["log"])


# -- the reading -----------------------------------------------------------------------------


def _reading_clicks(results: dict) -> list[str]:
    rows = _log(results).ctr_by_position
    if len(rows) < 2:
        return []
    first, last = rows[0], rows[-1]
    k = last.position
    c1, ck = first.ctr, last.ctr
    a1, ak = first.mean_click_given_examined, last.mean_click_given_examined
    if not c1:
        return [f"The log has no clicks at position 1 ({first.impressions:,} impressions)."]
    if not ck:
        return [
            f"Nobody clicked at position {k} ({last.impressions:,} impressions), against a "
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


def _section_data(results: dict) -> list[str]:
    d, log = results["data"], _log(results)
    rows = []
    for part, p in d["parts"].items():
        labels = ", ".join(f"{float(k):g}: {v:,}" for k, v in p["labels"].items())
        rows.append([part, f"{p['queries']:,}", f"{p['docs']:,}", labels])
    iv = ", ".join(f"{k}: {v:,}" for k, v in log.sessions_by_intervention.items())
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
    relevance = f" {log.relevance[0].upper()}{log.relevance[1:]}." if log.relevance else ""
    return [
        "## Data and click log",
        "",
        f"Data: **{d['name'] or d['source']}** ({d['n_features']} features).{_seed_note(results)}",
        "",
        _table(["part", "queries", "documents", "labels (grade: count)"], rows),
        "",
        f"Logging policy: **{prod['policy']}**{trained}. Click model: `{log.click_model}`."
        f"{relevance}",
        "",
        f"The log (`{log.path}`) has {log.sessions:,} sessions, {log.impressions:,} "
        f"displayed results and {log.clicks:,} clicks "
        f"({log.clicks / max(log.sessions, 1):.3f} per session); sessions by "
        f"intervention: {iv}.",
        "",
    ]


def _seed_note(results: dict) -> str:
    """Why the data's seed is not the config's ``seed`` (it is derived from it)."""
    cfg = results.get("config") or {}
    name = results["data"].get("name") or ""
    if "seed=" not in name or "seed" not in cfg:
        return ""
    if (cfg.get("data") or {}).get("seed") is not None:
        return " Its seed is the `[data] seed` of the configuration."
    return (
        f" Its seed is not the configuration's `seed = {cfg['seed']}` but derived from it: "
        "every stage draws its own seed from the master seed (numpy `SeedSequence`), so "
        "the stages never share a random stream and changing one stage's seed moves no "
        "other; `[data] seed` sets it directly."
    )


def _section_ctr(results: dict) -> list[str]:
    log = _log(results)
    view = log.ctr_view
    rows = [
        [
            r.position,
            f"{r.impressions:,}",
            f"{r.clicks:,}",
            _f(r.ctr, 4),
            _f(r.mean_label, 2),
            _f(r.mean_click_given_examined),
            _f(r.true_theta),
        ]
        for r in log.ctr_by_position
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
        (
            "ctr_by_position",
            "Observed CTR, IPS-corrected CTR and the true relevance per position",
        ),
        ("click_heatmap", "CTR per position and relevance label"),
    ):
        if key in results["figures"]:
            out += [f"![{caption}]({results['figures'][key]})", "", f"*{caption}.*", ""]
    return out
