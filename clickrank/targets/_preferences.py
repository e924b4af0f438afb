r"""Pairwise click preferences (RankNet targets): Joachims et al. (2005, 2007) and FairPairs.

:func:`click_preferences` derives weighted preference pairs from the clicks
of each session by the strategies of :data:`STRATEGIES`; :func:`skip_above`
and :func:`fair_pairs` are its two most used settings and
:func:`label_agreement` checks a pairwise target against true labels.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from .._core._validation import InputError, LogSchemaError
from ..datasets import RankingData
from ..engine import fairpairs_sessions, is_spark, preference_counts
from ..engine.join import candidate_mask, per_doc, prepare_log
from ._target import Target
from ._theta import as_theta, context_theta

__all__ = [
    "click_preferences",
    "skip_above",
    "fair_pairs",
    "label_agreement",
    "parse_strategy",
    "STRATEGIES",
]


#: Preference strategies of :func:`click_preferences` (combine with ``"+"``).
STRATEGIES = ("skip-above", "last-click-skip-above", "skip-previous", "skip-next", "fairpairs")

_ALIASES = {
    "click-skip-above": "skip-above",
    "click-skip-previous": "skip-previous",
    "click-skip-next": "skip-next",
    "no-click-next": "skip-next",
    "click-no-click-next": "skip-next",
}

_ADJACENT = {"skip-previous": -1, "skip-next": 1, "fairpairs": -1}  # p_lose - p_win


def parse_strategy(strategy: str) -> tuple[str, ...]:
    """Canonical rule names of a strategy string such as ``"skip-above+skip-next"``.

    Names are case-insensitive; ``"click-skip-next"`` and ``"no-click-next"``
    mean ``"skip-next"``, ``"click-skip-above"`` means ``"skip-above"``,
    ``"click-skip-previous"`` means ``"skip-previous"``. Repeated rules count once.
    ``"fairpairs"`` cannot be combined: its preferences come from the FairPairs
    sessions only and are unbiased on their own.
    """
    if not isinstance(strategy, str) or not strategy.strip():
        raise InputError(f"strategy must be a non-empty string, got {strategy!r}")
    rules: list[str] = []
    for part in strategy.split("+"):
        name = _ALIASES.get(part.strip().lower(), part.strip().lower())
        if name not in STRATEGIES:
            raise InputError(
                f"unknown preference strategy {part.strip()!r} in {strategy!r}; choose from "
                f"{list(STRATEGIES)} (or aliases {sorted(_ALIASES)}), combined with '+'"
            )
        if name not in rules:
            rules.append(name)
    if "fairpairs" in rules and len(rules) > 1:
        raise InputError(
            "'fairpairs' cannot be combined with other strategies: it reads only the FairPairs "
            "sessions; build the targets separately"
        )
    return tuple(rules)


def _rule_expr(rule: str) -> pl.Expr:
    """Filter on a (clicked ``win``, unclicked ``lose``) pair of one session.

    Besides :data:`STRATEGIES`, the internal rule ``"all"`` keeps every pair of a
    click and a shown non-click (the propensity-ratio pairs of :mod:`._pairwise`).
    """
    p_win, p_lose = pl.col("p_win"), pl.col("p_lose")
    if rule == "all":
        return pl.lit(True)
    if rule == "skip-above":
        return p_lose < p_win
    if rule == "last-click-skip-above":
        return (p_win == pl.col("last_click")) & (p_lose < p_win)
    if rule == "fairpairs":
        start, last = pl.col("swap_pivot"), pl.col("swap_k")
        return (
            (p_lose == p_win - 1)
            & (p_lose >= start)
            & ((p_lose - start) % 2 == 0)
            & (p_win <= last)
        )
    return p_lose == p_win + _ADJACENT[rule]


def _preference_rows(base: pl.LazyFrame, rules: tuple[str, ...]) -> pl.LazyFrame:
    """One row per preference ``(session, query, win, p_win, lose, p_lose)`` the rules derive.

    A pair derived by several rules in one session is one preference. Rules
    between neighbours only are equi-joins on the shifted position; the others
    join the clicked and the unclicked results of a session (at most
    ``K^2 / 4`` rows per session).
    """
    extra = ["swap_pivot", "swap_k"] if rules == ("fairpairs",) else []
    clicked = base.filter(pl.col("click")).select(
        "session", "query", pl.col("doc").alias("win"), pl.col("position").alias("p_win"), *extra
    )
    if "last-click-skip-above" in rules:
        clicked = clicked.with_columns(last_click=pl.col("p_win").max().over("session"))
    skipped = base.filter(~pl.col("click")).select(
        "session", "query", pl.col("doc").alias("lose"), pl.col("position").alias("p_lose")
    )
    keep = ["session", "query", "win", "p_win", "lose", "p_lose"]
    if all(r in _ADJACENT for r in rules):
        frames = []
        for rule in rules:  # a loop over at most two rules
            f = clicked.with_columns(p_lose=pl.col("p_win") + _ADJACENT[rule]).join(
                skipped, on=["session", "query", "p_lose"], how="inner"
            )
            frames.append(f.filter(_rule_expr(rule)).select(keep))
        return frames[0] if len(frames) == 1 else pl.concat(frames)
    joined = clicked.join(skipped, on=["session", "query"], how="inner")
    keep_pair = pl.any_horizontal([_rule_expr(r) for r in rules])
    return joined.filter(keep_pair).select(keep)


def aggregate_pairs(
    prefs: pl.LazyFrame | tuple[pl.DataFrame, int],
    keys: pl.DataFrame,
    weight: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Preference rows of :func:`_preference_rows` as weighted pairs of data rows.

    The preferences are counted per (query, win, lose, p_win, p_lose) in polars;
    ``weight(count, p_win, p_lose)`` turns the counts into weights (float64
    counts, int64 1-based positions) and they are summed per pair of data rows
    in numpy in a fixed order, so the weights are the same bytes whatever
    polars' threading. Returns ``(pairs [n, 2], weights [n], counts)`` with the
    number of preferences, distinct pairs and sessions with a preference.
    ``prefs`` may also be those counts and sessions, already aggregated
    (:func:`clickrank.engine.preference_counts` on Spark).
    """
    if isinstance(prefs, tuple):
        agg, sessions = prefs
    else:
        agg, n_sess = pl.collect_all(
            [
                prefs.group_by(["query", "win", "lose", "p_win", "p_lose"]).agg(
                    pl.len().alias("count")
                ),
                prefs.select(pl.col("session").n_unique().alias("n")),
            ]
        )
        sessions = int(n_sess.item())
    for side in ("win", "lose"):  # the data row of the preferred and of the other document
        agg = agg.join(
            keys.rename({"doc": side, "row": f"row_{side}"}), on=["query", side], how="left"
        )
    agg = agg.sort("row_win", "row_lose", "p_win", "p_lose")
    both = np.column_stack([agg["row_win"].to_numpy(), agg["row_lose"].to_numpy()])
    w = weight(
        agg["count"].to_numpy().astype(np.float64),
        agg["p_win"].to_numpy().astype(np.int64),
        agg["p_lose"].to_numpy().astype(np.int64),
    )
    pair_rows, inverse = np.unique(
        both.reshape(-1, 2).astype(np.int64), axis=0, return_inverse=True
    )
    weights = np.bincount(inverse.ravel(), weights=w, minlength=len(pair_rows))
    counts = {
        "preferences": int(agg["count"].sum()) if agg.height else 0,
        "distinct_pairs": len(pair_rows),
        "sessions_with_preferences": sessions,
    }
    return pair_rows.reshape(-1, 2), weights, counts


def click_preferences(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    *,
    strategy: str = "skip-above",
    ips_weighted: bool = False,
    propensities: Any = None,
    candidates: str = "shown",
) -> Target:
    r"""Pairwise preferences read from clicks, by the strategies of Joachims et al. (2005, 2007).

    In a session, let a result ``d`` at position :math:`p` be clicked and a
    result ``d'`` at position :math:`p'` not be clicked. The strategies
    derive :math:`d \succ d'` when

    ==========================  ===========================================================
    ``"skip-above"``            :math:`p' < p` ("Click > Skip Above", Joachims (2002);
                                Joachims et al. (2005), §5.3)
    ``"last-click-skip-above"`` :math:`p' < p` and ``d`` is the lowest-ranked click of the
                                session ("Last Click > Skip Above")
    ``"skip-previous"``         :math:`p' = p - 1` ("Click > Skip Previous")
    ``"skip-next"``             :math:`p' = p + 1` ("Click > No-Click Next";
                                alias ``"click-skip-next"``)
    ``"fairpairs"``             FairPairs sessions only: ``(p', p)`` is one of the session's
                                pairs ``(r, r + 1)`` (Radlinski & Joachims (2006)), i.e. the
                                lower result of a pair was clicked and the upper one was not
    ==========================  ===========================================================

    Strategies combine with ``"+"`` (e.g. ``"skip-above+skip-next"``): the
    union of the rules, a pair derived by several rules in one session
    counting once. Preferences are counted per query over all sessions
    (weights = counts) and LambdaMART fits a pairwise logistic (RankNet)
    loss on them (:func:`clickrank.lambdas.pair_lambdas`).

    **What each assumes and its bias.** All strategies assume that an
    unclicked result was examined, which the position says nothing about
    below the last click; that is why the rules above only compare a click
    with results above it or adjacent to it. Users scan top-down, so a
    clicked result below an unclicked one is evidence of relative relevance
    ("relative, not absolute", Joachims et al. (2005)). But the pairs are
    *presentation-biased*: ``skip-above``, ``last-click-skip-above`` and
    ``skip-previous`` only ever prefer a lower-ranked result to a
    higher-ranked one, so they always contradict the presented order; a
    learner trained on logs of a fixed ranker learns to reverse that ranker
    (Joachims et al. (2005); Radlinski & Joachims (2006)). ``skip-next``
    always agrees with the presented order and rewards what the logger put on
    top (a clicked top result and an unexamined next one give a preference,
    so it inherits trust and position bias). Combining the two
    (``"skip-above+skip-next"``) only balances the directions. The
    "last click" is the lowest-ranked click: logs carry no click times, and
    under top-down scanning the last click in time is the lowest one.
    ``"fairpairs"`` is unbiased by design if a user's examination and clicks
    within a pair depend on its ranks but not on which document is on top
    (Radlinski & Joachims (2006)): each pair is shown in both orders with
    probability 1/2 (:class:`clickrank.simulation.FairPairs`).

    Parameters
    ----------
    data : RankingData
    log : polars DataFrame or LazyFrame
        Click log with ``session``, ``query``, ``doc``, ``position``,
        ``click``; ``"fairpairs"`` also needs ``intervention``,
        ``swap_pivot`` (the first paired rank, 1 or 2) and ``swap_k`` (the
        lower rank of the last pair), as written by
        :func:`clickrank.simulation.simulate`. Strategies other than
        ``"fairpairs"`` read every session, whatever its intervention; filter
        the log to restrict them.
    strategy : str
        One of :data:`STRATEGIES`, or several joined with ``"+"``.
    ips_weighted : bool
        Weight each preference by :math:`1/\theta_p` of the click's position
        (propensity-weighted pairwise loss, Joachims et al. (2017), §4);
        requires ``propensities``. Not defined for ``"fairpairs"``.
    propensities : array-like or object with ``.theta``, optional
        ``theta[p - 1]``; an estimate per context weighs each preference by its
        session's context's curve (the log holds the context columns).
    candidates : {"shown", "all"}
        Documents that take part in the ranking (for ΔNDCG weighting).

    Returns
    -------
    Target
        Pairwise target named after the strategy; ``metadata`` holds the
        number of impressions, preferences, distinct pairs and sessions with
        a preference (and FairPairs sessions for ``"fairpairs"``).

    Raises
    ------
    InputError
        Unknown strategy, ``ips_weighted`` without propensities, or
        ``"fairpairs"`` on a log without FairPairs sessions.
    LogSchemaError
        Missing columns, non-boolean clicks, or ``(query, doc)`` not in ``data``.
    """
    rules = parse_strategy(strategy)
    fair = rules == ("fairpairs",)
    if ips_weighted and propensities is None:
        raise InputError("ips_weighted=True needs propensities")
    if ips_weighted and fair:
        raise InputError(
            "ips_weighted is not defined for 'fairpairs': its preferences need no propensities"
        )
    theta = as_theta(propensities) if ips_weighted else None
    contexts = context_theta(propensities) if ips_weighted else None
    needed = ("session", "query", "doc", "position", "click")
    if fair:
        needed += ("intervention", "swap_pivot", "swap_k")
    by = () if contexts is None else contexts.columns
    lf, keys = prepare_log(data, log, (*needed, *by), None if theta is None else len(theta))
    if contexts is not None and is_spark(lf):
        raise InputError("per-context propensities read a polars log; aggregate the Spark "
                         "log first or weigh by the pooled curve")  # fmt: skip
    shown = per_doc(lf, keys, [pl.len().alias("shown")], "click log")
    rows_shown = shown["row"].to_numpy()
    base = (
        lf
        if is_spark(lf)
        else lf.select(
            "session",
            "query",
            "doc",
            pl.col("position").cast(pl.Int64),
            pl.col("click").cast(pl.Boolean),
            *by,
            *(
                [
                    pl.col("intervention").cast(pl.String),
                    pl.col("swap_pivot").cast(pl.Int64),
                    pl.col("swap_k").cast(pl.Int64),
                ]
                if fair
                else []
            ),
        )
    )
    metadata: dict[str, Any] = {"strategy": "+".join(rules)}
    if fair and is_spark(base):
        base, n_fair, lo, hi = fairpairs_sessions(base)
    elif fair:
        base = base.filter(pl.col("intervention") == "fairpairs")
        n_fair, lo, hi = (
            base.group_by("session")
            .agg(pl.col("swap_pivot").first())
            .select(pl.len(), pl.col("swap_pivot").min().alias("lo"), pl.col("swap_pivot").max())
            .collect()
            .row(0)
        )
    if fair:
        if n_fair == 0:
            raise InputError(
                "the log has no FairPairs sessions (intervention 'fairpairs'); simulate with "
                "interventions=FairPairs(fraction) or log the pairing of a FairPairs experiment"
            )
        if lo is None or lo < 1 or hi > 2:
            raise LogSchemaError(
                f"FairPairs sessions must record the first paired rank (1 or 2); found {lo}..{hi}",
                column="swap_pivot",
            )
        metadata["fairpairs_sessions"] = int(n_fair)
    if contexts is not None:  # positions become (context, rank) slots: θ per impression
        base, theta = contexts.slot_positions(base), contexts.table.ravel()
    prefs = (
        preference_counts(base, rules, _ADJACENT)
        if is_spark(base)
        else _preference_rows(base, rules)
    )

    def weight(count: np.ndarray, p_win: np.ndarray, _p_lose: np.ndarray) -> np.ndarray:
        return count if theta is None else count / theta[p_win - 1]

    pair_rows, weights, counts = aggregate_pairs(prefs, keys, weight)
    metadata.update(
        impressions=int(shown["shown"].sum()),
        **counts,
        ips_weighted=bool(ips_weighted),
    )
    return Target(
        "+".join(rules),
        pairs=pair_rows,
        pair_weights=weights,
        candidates=candidate_mask(data.n_docs, rows_shown, candidates),
        metadata=metadata,
    )


def skip_above(
    data: RankingData,
    log: pl.DataFrame | pl.LazyFrame,
    *,
    ips_weighted: bool = False,
    propensities: Any = None,
    candidates: str = "shown",
) -> Target:
    r"""Skip-above preferences: a clicked result is preferred to every unclicked result above it.

    ``click_preferences(data, log, strategy="skip-above", ...)``: Joachims
    (2002); Joachims et al. (2005), §5.3 ("Click > Skip Above"). Every such pair
    contradicts the presented order, so on logs of a deterministic ranker the
    learner reverses that ranker; use randomized logging or
    :func:`fair_pairs` (see :func:`click_preferences`).

    Parameters
    ----------
    data, log, ips_weighted, propensities, candidates
        As in :func:`click_preferences`.
    """
    return click_preferences(
        data,
        log,
        strategy="skip-above",
        ips_weighted=ips_weighted,
        propensities=propensities,
        candidates=candidates,
    )


def fair_pairs(
    data: RankingData, log: pl.DataFrame | pl.LazyFrame, *, candidates: str = "shown"
) -> Target:
    r"""FairPairs preferences (Radlinski & Joachims (2006)).

    ``click_preferences(data, log, strategy="fairpairs")``: in the sessions
    with intervention ``"fairpairs"`` (:class:`clickrank.simulation.FairPairs`),
    for each pair of ranks ``(r, r + 1)`` of the session's pairing, a click on
    the lower result and none on the upper one gives
    lower :math:`\succ` upper. Because each pair was swapped with probability
    1/2, these preferences are not affected by presentation bias under the
    paper's assumptions. Other sessions are ignored (they still define the
    shown candidates).
    """
    return click_preferences(data, log, strategy="fairpairs", candidates=candidates)


def label_agreement(target: Target, labels: np.ndarray) -> dict[str, float]:
    """How the preference weight of a pairwise target relates to true labels.

    Returns the shares of the total weight whose preferred document has a
    higher (``"agree"``), lower (``"contradict"``) or equal (``"tie"``)
    label, the accuracy on non-tied pairs ``agree / (agree + contradict)``
    and the total ``"weight"``.
    NaN shares when the target has no pairs.
    """
    if target.pairs is None:
        raise InputError(f"target {target.name!r} holds gains, not preference pairs")
    y = np.asarray(labels, dtype=np.float64)
    if target.pairs.size and target.pairs.max() >= y.shape[0]:
        raise InputError(
            f"labels has {y.shape[0]} rows, the target indexes row {target.pairs.max()}"
        )
    w = target.pair_weights
    total = float(w.sum())
    a, b = y[target.pairs[:, 0]], y[target.pairs[:, 1]]
    share = (lambda m: float(w[m].sum()) / total) if total > 0 else (lambda m: float("nan"))
    agree, contra, tie = share(a > b), share(a < b), share(a == b)
    decided = agree + contra
    return {
        "agree": agree,
        "contradict": contra,
        "tie": tie,
        "accuracy": agree / decided if decided > 0 else float("nan"),
        "weight": total,
    }
