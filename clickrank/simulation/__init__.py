r"""Click-log simulation: a logging policy, interventions and a click model over sessions.

:func:`simulate` draws ``n_sessions`` impressions. For each session it picks a
query (uniformly, or by a frequency array), lets the logging policy rank the
query's documents (:mod:`clickrank.policies`), optionally applies a
randomized intervention, and lets a click model
(:mod:`clickrank.clickmodels`) click on the displayed top ``K``. Everything
runs on dense ``[sessions, positions]`` arrays in chunks and becomes the long
click-log table (:mod:`clickrank.clicklog`) in one vectorized conversion.

Reproducibility
---------------
Every random draw is a counter-based function of ``(seed, session index,
stream)`` (:mod:`clickrank._core._random`), so the log does not depend on
``chunk_size``: the same seed gives the same bytes for any chunking, and
session ``i`` of a run is the same in a longer run.

Interventions
-------------
``Swap(fraction, k)``
    Swap the results at ranks 1 and ``k`` (Joachims et al. (2017),
    §5.3). Under the PBM the click-through rate of the swapped-in
    rank-1 document at position ``k`` over that of rank-1 documents at
    position 1 estimates :math:`\theta_k / \theta_1`.
``RandPair(fraction, pivot)``
    Swap the result at the pivot rank with the result at a uniformly chosen
    other rank (Wang et al. (2018), §4,
    "RandPair"); ``pivot=None`` swaps a uniformly chosen pair of ranks.
``Randomize(fraction, k)``
    Shuffle the top ``k`` uniformly ("RandTop-k"; Wang et al. (2016, 2018);
    Joachims et al. (2017)): CTR per position is then proportional to
    :math:`\theta_p` under the PBM.
``FairPairs(fraction)``
    Pair up adjacent ranks, starting at rank 1 or 2 with probability 1/2
    each ((1,2), (3,4), ... or (2,3), (4,5), ...), and swap each pair
    independently with probability 1/2 (Radlinski & Joachims (2006)).
    A click on the lower result of a pair with no click on the upper one is
    a preference free of presentation bias under the paper's assumptions
    (:func:`clickrank.targets.fair_pairs`).

Context
-------
``Context(name, shares, click_models)`` draws one value per session from
``shares`` (e.g. ``device``: 30 % ``phone``, 70 % ``desktop``), logs it in a
Categorical column ``name``, and clicks each session by its value's click
model, so the examination curve of every context is known.

Swapped sessions record the two exchanged positions in ``swap_pivot`` and
``swap_k`` (0 in other sessions), so estimators need not guess them.
FairPairs sessions record the first paired rank (1 or 2) in ``swap_pivot``
and the lower rank of the last complete pair in ``swap_k``: the pairs are
``(r, r + 1)`` for ``r = swap_pivot, swap_pivot + 2, ...`` with ``r + 1 <= swap_k``.
"""

from __future__ import annotations

# private names re-exported for tests and benchmarks (the module was flat before)
from .context import STREAM_CONTEXT, Context
from .interventions import (  # noqa: F401
    INTERVENTION_CATEGORIES,
    FairPairs,
    Intervention,
    Randomize,
    RandPair,
    Swap,
    _apply_interventions,
    _as_interventions,
)
from .sampler import (  # noqa: F401
    STREAM_USER,
    _click_sampler,
    _grade_table,
    _query_sampler,
    _sample_queries,
    sample_clicks,
)
from .simulate import OutputOptions, SimulationSpec, simulate
from .writer import (  # noqa: F401
    DISK_BYTES_PER_ROW,
    MEMORY_BYTES_PER_ROW,
    PART_SESSIONS,
    ROW_GROUP_ROWS,
    _Cells,
    _id_source,
    _RowTable,
    _to_table,
    estimate_log_bytes,
)

__all__ = [
    "Intervention",
    "Swap",
    "RandPair",
    "Randomize",
    "FairPairs",
    "Context",
    "STREAM_CONTEXT",
    "simulate",
    "SimulationSpec",
    "OutputOptions",
    "estimate_log_bytes",
    "sample_clicks",
    "INTERVENTION_CATEGORIES",
    "STREAM_USER",
    "PART_SESSIONS",
    "ROW_GROUP_ROWS",
]
