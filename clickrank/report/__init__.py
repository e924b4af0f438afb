r"""The bias-analysis report of an experiment: ``report.md`` and ``summary.json``.

:func:`write_report` renders the results dict that
:func:`clickrank.experiment.run_experiment` assembles (the content of
``summary.json``) as a GitHub-flavoured markdown report with relative links to
the PNG figures, and writes both files atomically.

Sections follow the flow, one module per concept: ``clicks`` (the log and
CTR by position), ``propensities`` (estimates and fitted click models),
``rankers`` (training and offline evaluation), ``online`` (interleaving and A/B,
rendered from :class:`~clickrank.online.InterleavingResult` and
:class:`~clickrank.online.ABResult` rebuilt with ``from_dict``), ``curves``
(the learning curve); ``document`` assembles them.

:func:`reading` turns the numbers into a short plain-language reading. Every
sentence is computed from the results and its wording follows them: which
ranker is better, whether a difference is significant, whether an interval
covers the truth. Nothing in it is a hard-coded claim.
"""

from __future__ import annotations

from .document import reading, render_report, write_report

__all__ = ["write_report", "render_report", "reading"]
