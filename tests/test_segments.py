"""Query-segment helpers: the dense and the segmented-sort routes of rank_order agree."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clickrank._core._segments import (
    _dense_order,
    _lexsort_order,
    is_dense,
    rank_order,
    ranks,
    to_padded,
    top_rows,
    within_index,
)

# scores with many ties, NaN, infinities and both zeros
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 1.0, 2.5]


def _reference(scores: np.ndarray, qptr: np.ndarray) -> np.ndarray:
    """Plain loop: descending score, ties by row order; NaN sorts as -inf (last)."""
    out = []
    for q in range(len(qptr) - 1):
        a, b = int(qptr[q]), int(qptr[q + 1])

        def key(r: int) -> tuple:
            s = scores[r]
            return (np.inf if np.isnan(s) else -s, r)

        out.extend(sorted(range(a, b), key=key))
    return np.array(out, dtype=np.int64)


def _key(scores: np.ndarray) -> np.ndarray:
    key = -np.asarray(scores, dtype=np.float64)
    key[np.isnan(key)] = np.inf
    return key


@st.composite
def segments(draw):
    lengths = draw(st.lists(st.integers(0, 9), min_size=0, max_size=12))
    qptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = st.one_of(st.sampled_from(SPECIAL), st.integers(-3, 3).map(float))
    scores = np.array(draw(st.lists(values, min_size=int(qptr[-1]), max_size=int(qptr[-1]))))
    return scores.astype(np.float64), qptr


@settings(max_examples=200, deadline=None)
@given(segments())
def test_both_routes_match_the_plain_loop(case):
    scores, qptr = case
    expected = _reference(scores, qptr)
    key = _key(scores)
    for order in (_dense_order(key, qptr), _lexsort_order(key, qptr), rank_order(scores, qptr)):
        assert order.dtype == np.int64
        np.testing.assert_array_equal(order, expected)


@settings(max_examples=200, deadline=None)
@given(segments(), st.integers(0, 10))
def test_top_rows_are_the_first_rows_of_rank_order(case, width):
    scores, qptr = case
    expected, _ = to_padded(rank_order(scores, qptr), qptr, fill=-1, width=width)
    top = top_rows(scores, qptr, width)
    assert top.dtype == np.int64
    np.testing.assert_array_equal(top, expected)
    np.testing.assert_array_equal(top_rows(scores, qptr, width, threads=False), expected)


@pytest.mark.parametrize("length", [1, 7, 30])
def test_equal_lengths_take_the_reshape_route_and_agree(length):
    rng = np.random.default_rng(length)
    n_q = 500
    qptr = np.arange(n_q + 1, dtype=np.int64) * length
    scores = rng.integers(0, 4, n_q * length).astype(float)  # many ties
    scores[rng.random(scores.size) < 0.1] = np.nan
    assert is_dense(qptr)
    key = _key(scores)
    dense = _dense_order(key, qptr)
    np.testing.assert_array_equal(dense, _lexsort_order(key, qptr))
    np.testing.assert_array_equal(rank_order(scores, qptr), dense)
    # every query keeps its own rows
    np.testing.assert_array_equal(dense // length, np.repeat(np.arange(n_q), length))


def test_very_ragged_data_takes_the_lexsort_route():
    qptr = np.array([0, 5000, 5001, 5003, 5003, 5010], dtype=np.int64)
    assert not is_dense(qptr)
    scores = np.random.default_rng(1).integers(0, 50, 5010).astype(float)
    np.testing.assert_array_equal(rank_order(scores, qptr), _reference(scores, qptr))


def test_ranks_invert_the_order_and_input_is_not_modified():
    qptr = np.array([0, 3, 3, 7], dtype=np.int64)
    scores = np.array([0.5, np.nan, 2.0, 1.0, 1.0, -np.inf, 3.0])
    before = scores.copy()
    np.testing.assert_array_equal(ranks(scores, qptr), [2, 3, 1, 2, 3, 4, 1])
    np.testing.assert_array_equal(scores, before)
    assert rank_order(np.array([]), np.array([0], dtype=np.int64)).shape == (0,)


def test_to_padded_and_within_index():
    qptr = np.array([0, 2, 2, 5], dtype=np.int64)
    np.testing.assert_array_equal(within_index(qptr), [0, 1, 0, 1, 2])
    padded, mask = to_padded(np.arange(5), qptr, fill=-1, width=2)
    np.testing.assert_array_equal(padded, [[0, 1], [-1, -1], [2, 3]])
    np.testing.assert_array_equal(mask, [[True, True], [False, False], [True, True]])
