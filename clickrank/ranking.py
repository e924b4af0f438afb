"""Rankers as scores: the one place that turns a ranker into a score per document.

A ranker is an array of scores (one per row of the data) or any object with
``predict(X)``; higher scores rank higher and ties keep the row order (stable
sort, DESIGN §2). This module sits in the data layer: it imports no model, so
logging policies, evaluation and online experiments can all use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._core._validation import InputError
from .datasets import RankingData

__all__ = ["ranker_scores"]


def ranker_scores(ranker: Any, data: RankingData, *, name: str = "ranker") -> np.ndarray:
    """Scores of every row of ``data``: ``ranker`` itself (an array) or ``ranker.predict(X)``.

    A ranker whose class sets ``accepts_ranking_data = True`` (such as
    :class:`~clickrank.lambdamart.LambdaMART`) is given ``data`` itself, so its
    errors can name the data; any other ranker gets the feature matrix ``data.X``.

    Parameters
    ----------
    ranker : array ``[n_docs]`` or object with ``predict(X)``
        Scores, or the model that gives them.
    data : RankingData
        The documents to score.
    name : str
        Names the ranker in error messages.

    Returns
    -------
    numpy.ndarray
        float64 ``[n_docs]``, all finite.

    Raises
    ------
    InputError
        If the scores do not have one finite value per document.

    Examples
    --------
    >>> from clickrank.datasets import synthetic
    >>> data = synthetic(2, 3, seed=0)
    >>> ranker_scores([3, 2, 1, 1, 2, 3], data).tolist()
    [3.0, 2.0, 1.0, 1.0, 2.0, 3.0]
    """
    if hasattr(ranker, "predict") and not isinstance(ranker, np.ndarray):
        takes_data = getattr(type(ranker), "accepts_ranking_data", False) is True
        scores = ranker.predict(data if takes_data else data.X)
    elif isinstance(ranker, (np.ndarray, Sequence)):
        scores = ranker
    else:
        raise InputError(
            f"{name} must be an array of scores or an object with predict(X); got "
            f"{type(ranker).__name__}"
        )
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if s.shape != (data.n_docs,):
        raise InputError(f"{name} gives {s.size} scores but the data has {data.n_docs} documents")
    if not np.all(np.isfinite(s)):
        bad = int(np.flatnonzero(~np.isfinite(s))[0])
        raise InputError(f"{name} gives a non-finite score ({s[bad]}) for row {bad}")
    return s
