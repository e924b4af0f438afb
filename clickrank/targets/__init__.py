r"""Training targets for LambdaMART: oracle, naive, IPS and click preferences.

A :class:`Target` turns a click log (DESIGN §2 schema) into what
:class:`clickrank.LambdaMART` optimizes, aligned to the rows of a
:class:`~clickrank.datasets.RankingData`:

* per-document non-negative **gains** (listwise LambdaRank targets): oracle,
  naive, IPS, and the model-aware corrections of :mod:`._corrections` (the
  affine trust-bias correction, cascade-model-based IPS, a fitted click
  model's relevance), or
* weighted **preference pairs** (pairwise RankNet targets): click
  preferences by the strategies of Joachims et al. (2005, 2007) and FairPairs
  (Radlinski & Joachims (2006)), :func:`click_preferences`; the debiased pairs
  of :mod:`._pairwise`: propensity-ratio pairs (Wang et al. (2021),
  :func:`propensity_ratio_pairs`) and the propensity-weighted rank loss
  (Joachims et al. (2017), :func:`ips_rank_pairs`), or
* **session lists** (:class:`SessionLists`) for losses whose pair weights are
  learned during training: Unbiased LambdaMART (Hu et al. (2019),
  :func:`unbiased_lambdamart`),

plus a **candidate mask**: the documents that take part in each query's list.
For click-based targets the default candidate set is the documents *shown at
least once* for their query. A never-shown document has no click because it
was never seen, not because it is irrelevant; counting it as gain 0 re-learns
the logging ranker's cut-off (item-selection bias, Ovaisi et al. (2020)).

All log work is done by polars aggregations (the log may be a DataFrame or a
LazyFrame) joined to the data by ``(query, doc)``; there is no Python loop
over sessions.
"""

from __future__ import annotations

from ._corrections import affine, cascade_ips, fitted_relevance
from ._direct import RELEVANCE_PARAMS, dr, relevance_model
from ._factory import TARGET_NAMES, make_target, needs_propensities
from ._gains import (
    AUTO_HYBRID_BELOW,
    CANDIDATE_SETS,
    NORMALIZATIONS,
    auto_candidates,
    ips,
    naive,
    never_shown_weight,
    oracle,
)
from ._pairwise import ips_rank_pairs, propensity_ratio_pairs, unbiased_lambdamart
from ._preferences import (
    STRATEGIES,
    click_preferences,
    fair_pairs,
    label_agreement,
    parse_strategy,
    skip_above,
)
from ._stats import ClickStats, auto_clip, click_stats
from ._target import SessionLists, Target
from ._theta import ContextTheta, as_theta, context_theta, read_theta

__all__ = [
    "Target",
    "SessionLists",
    "oracle",
    "naive",
    "ips",
    "dr",
    "relevance_model",
    "click_stats",
    "ClickStats",
    "auto_clip",
    "make_target",
    "TARGET_NAMES",
    "needs_propensities",
    "RELEVANCE_PARAMS",
    "CANDIDATE_SETS",
    "AUTO_HYBRID_BELOW",
    "auto_candidates",
    "never_shown_weight",
    "NORMALIZATIONS",
    "affine",
    "cascade_ips",
    "fitted_relevance",
    "click_preferences",
    "skip_above",
    "fair_pairs",
    "label_agreement",
    "unbiased_lambdamart",
    "propensity_ratio_pairs",
    "ips_rank_pairs",
    "parse_strategy",
    "STRATEGIES",
    "as_theta",
    "read_theta",
    "ContextTheta",
    "context_theta",
]
