"""The large-log thresholds of the default learner, in one place.

Every part reads them from this module when it runs (``thresholds.PROCESSES_FROM``, not a copy
imported by name), so a test or a benchmark lowers one with ``monkeypatch.setattr`` on
this module and the whole learner follows.
"""

from __future__ import annotations

__all__ = ["PROCESSES_FROM", "SPREAD_DOCS"]

#: Documents from which ``ClickRanker(n_jobs > 1)`` fits its members in processes, several
#: at once; below, one after the other here, each on ``n_jobs`` threads (the same models):
#: starting the processes costs more than they save there (two cores, MQ2008 Fold1 with
#: 2·10⁴ sessions: 7.0 s in processes, 3.4 s here, 4.7 s on one thread; 10⁴ synthetic
#: documents 3.8, 2.3 and 3.1 s; at 10⁵ both 18.5-18.9 s).
PROCESSES_FROM = 200_000
#: Documents the average's weights are measured on, about: above them, each member's spread
#: is that of every k-th query's documents (k = ceil(n_docs / SPREAD_DOCS)). At 10^6
#: documents predicting every averaged member on every row took 32 of the fit's 613 s; every
#: fifth query's rows took 6.7 s and moved the weights by under 0.1 % (docs/default-cost.md).
SPREAD_DOCS = 200_000
