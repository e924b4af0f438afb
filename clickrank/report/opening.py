"""The report's plain-language opening: what the rankers are, what the headline means, what next.

Rendered into ``report.md`` from the results (it is not stored in ``summary.json``:
it is text about the numbers, which the reading and the tables already hold).
"""

from __future__ import annotations

from ._format import _f, _headline, _metric_rows, _pct
from .rankers import _offline_significant

#: What each ranker of a run is, in one sentence a newcomer can read.
_WHAT = {
    "production": "the ranker that was live when the clicks were logged (the *logging ranker*): "
    "it decided what users saw, so its own ranking is the baseline to beat",
    "naive": "trained on raw click counts: clicks do carry relevance, but users click what "
    "they see, and they see the top of production's list, so the counts also reward "
    "whatever production already ranked high",
    "ips": "trained on clicks weighted by 1/θ (*inverse propensity scoring*), where θ is the "
    "estimated chance that a user looks at each position at all (estimated from the log, "
    "see *Position bias* below): a click at position 8 counts more than one at position 1",
    "ips-true": "IPS with the simulator's true θ instead of the estimate: the best IPS can "
    "do, so the gap to IPS is the cost of estimating θ",
    "skip-above": 'trained on preferences "a clicked result beats every result above it that '
    'was skipped" (Joachims et al. 2005); with a fixed logging ranker this always points '
    "downwards, so it learns to reverse the ranking",
    "skip-above-ips": "skip-above preferences weighted by 1/θ",
    "pairs:fairpairs": "preferences from the FairPairs sessions, where adjacent results were "
    "swapped at random (Radlinski & Joachims 2006): the swap cancels the position bias that "
    "ruins skip-above",
    "oracle": "trained on the true relevance labels, which a real system does not have: the "
    "ceiling any click-trained ranker can approach",
    "dr": "doubly robust: IPS plus a model of relevance that lowers IPS's variance",
    "unbiased-lambdamart": "Unbiased LambdaMART: learns the position bias while it trains",
    "default": "what `clickrank train` fits with no options: a family of click rankers (naive, "
    "IPS on three candidate sets, doubly robust, Unbiased LambdaMART), each tuned on "
    "held-out clicks, averaged into one model and kept only if the clicks show it beats "
    "the safe ranker (*Safety check* below); its θ comes from what the log holds",
}

#: How the opening names a ranker whose config name is not a word.
_LABEL = {"pairs:fairpairs": "**FairPairs** (`pairs:fairpairs`)"}


def _section_plain(results: dict) -> list[str]:
    """``## In plain words``: the rankers, the headline number explained, what to do next."""
    ev = results["evaluation"]
    m = _headline(results)
    rows = _metric_rows(results)
    rankers = [r for r in ev["rankers"] if r in _WHAT]
    out = [
        "## In plain words",
        "",
        "Clicks are biased: people click what they see, and they see the top of the list. "
        "This run simulates users clicking on a search engine's results, trains rankers on "
        "those clicks in different ways, and scores each ranker against the true relevance "
        f"on test queries it never saw ({m}: 1 = a perfect ranking, higher is better).",
        "",
        *[f"- {_LABEL.get(r, f'**{r}**')}: {_WHAT[r]}." for r in rankers],
        "",
    ]

    def val(r: str) -> float | None:
        return rows[(r, m)]["mean"] if (r, m) in rows else None

    naive, ips, oracle = val("naive"), val("ips"), val("oracle")
    if None not in (naive, ips, oracle) and oracle > naive:
        closed = (ips - naive) / (oracle - naive)
        out += [
            f'"IPS closes {_pct(closed)} of the gap" means: naive scores {_f(naive)} and the '
            f"oracle {_f(oracle)}; IPS's {_f(ips)} goes {_pct(closed)} of the way from one "
            f"to the other (({_f(ips)} − {_f(naive)}) / ({_f(oracle)} − {_f(naive)})). "
            "0% would mean debiasing bought nothing, 100% that the clicks, corrected, are "
            "as good as knowing the labels.",
            "",
        ]
    out += ["**What to do next.**", "", *_next_steps(results, val), ""]
    return out


def _next_steps(results: dict, val) -> list[str]:
    m = _headline(results)
    naive, ips = val("naive"), val("ips")
    steps = []
    if naive is not None and ips is not None:
        sig = _offline_significant(results, "ips", "naive", m)
        if ips > naive and sig:
            steps.append(
                "- IPS beats naive here: on your own log, estimate θ from a small share of "
                "randomized traffic (`clickrank propensity LOG --method swap`), train with "
                "`clickrank train --target ips --propensities theta.json`, and check the "
                "new ranker online with an interleaving test (`clickrank interleave`) "
                "before an A/B test."
            )
        else:
            steps.append(
                "- IPS does not significantly beat naive here: check the propensity section "
                "(are the intervals narrow? do they cover the truth?), log more sessions or "
                "more randomized ones (`[interventions]`), and rerun."
            )
    default = val("default")
    if (
        default is not None
        and naive is not None
        and default > naive
        and (_offline_significant(results, "default", "naive", m))
    ):
        steps.append(
            "- The default learner beats naive here without being told how: on your own "
            "log, `clickrank train --data DATA --log LOG --out model` chooses the "
            "propensities from what the log holds, fits and averages the family, checks the "
            "result against the safe ranker, and says what it chose and why."
        )
    steps.append(
        "- Before trusting any correction on real clicks, ask which click model describes "
        "your users: `clickrank fit-clicks LOG` compares them on held-out sessions and "
        "prints the training command it calls for (docs/clickmodels.md)."
    )
    steps.append(
        "- The sections below hold the evidence: the clicks by position, the estimated vs "
        "true θ, every ranker with its confidence interval, the paired tests, the "
        "online test and the learning curve; `summary.json` holds the same numbers."
    )
    return steps
