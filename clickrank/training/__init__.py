"""The default click learner, in named parts.

:class:`~clickrank.training.learner.ClickRanker` wires them:

* :mod:`~clickrank.training.members`: the family of members (a target and its candidate
  set) and the target of each;
* :mod:`~clickrank.training.propensities`: the propensities the members and the
  validation use, and where they come from;
* :mod:`~clickrank.training.bounds`: the one paired one-sided bound every comparison uses;
* :mod:`~clickrank.training.search`: the member search, its schedule and the first-fold
  race;
* :mod:`~clickrank.training.backends`: where the members fit (here, in processes, as Spark
  tasks), each running a typed job;
* :mod:`~clickrank.training.combine`: the members' average and the select rule;
* :mod:`~clickrank.training.safety`: the unseen guard and the check against the safe
  ranker;
* :mod:`~clickrank.training.fallback`: the retrained fallback when the check fails;
* :mod:`~clickrank.training.report`: the selection table, ``summary`` and ``to_dict``;
* :mod:`~clickrank.training.thresholds`: the large-log thresholds, read at call time.

The package imports none of its parts here, so :mod:`clickrank.selection` can use
:mod:`~clickrank.training.bounds` without a cycle.
"""
