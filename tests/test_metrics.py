"""Tests of clickrank.metrics: worked examples, a plain-loop reference, conventions, errors."""

from __future__ import annotations

import doctest
import math
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clickrank import metrics as M
from clickrank._core._validation import InputError
from clickrank.metrics import (
    METRICS,
    MetricResult,
    average_precision,
    dcg,
    err,
    get_metric,
    ndcg,
    pfound,
    precision,
    reciprocal_rank,
)

# DESIGN §4: labels in ranked order (0, 3, 1, 0, 2, 0) and (1, 0, 0, 1); scores
# decrease along each list so that the row order is the ranking.
LABELS_1 = [0, 3, 1, 0, 2, 0]
LABELS_2 = [1, 0, 0, 1]
SCORES_1 = [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]
SCORES_2 = [4.0, 3.0, 2.0, 1.0]
ONE = (SCORES_1, LABELS_1, [0, 6])
BOTH = (SCORES_1 + SCORES_2, LABELS_1 + LABELS_2, [0, 6, 10])

log2 = math.log2
DCG_6 = (2**3 - 1) / log2(3) + (2**1 - 1) / log2(4) + (2**2 - 1) / log2(6)
IDCG_6 = (2**3 - 1) / log2(2) + (2**2 - 1) / log2(3) + (2**1 - 1) / log2(4)
DCG_3 = (2**3 - 1) / log2(3) + (2**1 - 1) / log2(4)
AP_1 = (1 / 2 + 2 / 3 + 3 / 5) / 3
AP_2 = (1 / 1 + 2 / 4) / 2


# ----------------------------------------------------------------- worked examples


def test_precision_at_1_3_5_matches_design_example():
    assert float(precision(*ONE, k=1)) == 0.0
    assert float(precision(*ONE, k=3)) == pytest.approx(2 / 3)
    assert float(precision(*ONE, k=5)) == pytest.approx(3 / 5)
    assert [round(float(precision(*ONE, k=k)), 3) for k in (1, 3, 5)] == [0.0, 0.667, 0.6]


def test_average_precision_and_map_match_design_example():
    r = average_precision(*BOTH)
    np.testing.assert_allclose(r.values, [AP_1, AP_2])
    assert float(r) == pytest.approx((AP_1 + AP_2) / 2)
    assert r.values.round(3).tolist() == [0.589, 0.75]
    assert round(float(r), 3) == 0.669


def test_reciprocal_rank_and_mrr_match_design_example():
    r = reciprocal_rank(*BOTH)
    assert r.values.tolist() == [1 / 2, 1 / 1]
    assert float(r) == pytest.approx(0.75)


def test_dcg_idcg_ndcg_match_design_example():
    assert float(dcg(*ONE, k=6)) == pytest.approx(DCG_6)
    assert round(float(dcg(*ONE, k=6)), 3) == 6.077
    ideal = dcg(SCORES_1, sorted(LABELS_1, reverse=True), [0, 6], k=6)
    assert float(ideal) == pytest.approx(IDCG_6)
    assert round(float(ideal), 3) == 9.393
    assert float(ndcg(*ONE, k=6)) == pytest.approx(DCG_6 / IDCG_6)
    assert round(float(ndcg(*ONE, k=6)), 3) == 0.647
    idcg_3 = (2**3 - 1) / log2(2) + (2**2 - 1) / log2(3) + (2**1 - 1) / log2(4)
    assert float(ndcg(*ONE, k=3)) == pytest.approx(DCG_3 / idcg_3)
    assert round(float(ndcg(*ONE, k=3)), 3) == 0.523


def test_ndcg_truncates_the_ideal_at_the_same_k():
    # labels (0, 0, 1, 2): at k=1 the ideal holds only the label-2 document
    r = ndcg([4, 3, 2, 1], [0, 0, 1, 2], [0, 4], k=1)
    assert float(r) == 0.0
    r = ndcg([1, 3, 2, 4], [0, 0, 1, 2], [0, 4], k=1)
    assert float(r) == 1.0


def test_linear_gain_uses_the_label_itself():
    expected = (3 / log2(3) + 1 / log2(4) + 2 / log2(6)) / (3 + 2 / log2(3) + 1 / log2(4))
    assert float(ndcg(*ONE, gain="linear")) == pytest.approx(expected)


def test_err_follows_chapelle_cascade():
    # labels (0, 3, 1, 0, 2, 0), y_max = 3: R = (2^y - 1) / 8
    r = [0, 7 / 8, 1 / 8, 0, 3 / 8, 0]
    expected = r[1] / 2 + (1 - r[1]) * r[2] / 3 + (1 - r[1]) * (1 - r[2]) * r[4] / 5
    assert float(err(*ONE)) == pytest.approx(expected)
    assert float(err(*ONE, k=2)) == pytest.approx(r[1] / 2)
    # an explicit top of scale changes every R_i
    r4 = [(2**y - 1) / 16 for y in LABELS_1]
    expected4 = r4[1] / 2 + (1 - r4[1]) * r4[2] / 3 + (1 - r4[1]) * (1 - r4[2]) * r4[4] / 5
    assert float(err(*ONE, max_grade=4)) == pytest.approx(expected4)


def test_pfound_follows_the_yandex_cascade():
    p = [(2**y - 1) / 8 for y in LABELS_1]
    look, expected = 1.0, 0.0
    for pr in p:
        expected += look * pr
        look *= (1 - pr) * (1 - 0.15)
    assert float(pfound(*ONE)) == pytest.approx(expected)
    # CatBoost convention: labels are the probabilities, decay = 1 - p_break
    assert float(
        pfound([3, 2, 1], [0.2, 0.9, 0.5], [0, 3], relevance_to_probability="identity", p_break=0.1)
    ) == pytest.approx(0.2 + 0.8 * 0.9 * 0.9 + 0.8 * 0.9 * 0.1 * 0.9 * 0.5)


def test_pfound_accepts_a_callable_mapping_like_a_table():
    table = np.array([0.0, 0.1, 0.3, 0.6])
    by_table = pfound(*ONE, relevance_to_probability=table)
    by_callable = pfound(*ONE, relevance_to_probability=lambda y: 0.2 * y)
    # ranked p = (0, 0.6, 0.1, 0, 0.3, 0); pLook falls by (1 - p) * 0.85 per rank
    look = [1, 0.85, 0.85**2 * 0.4, 0.85**3 * 0.4 * 0.9, 0.85**4 * 0.4 * 0.9]
    assert float(by_table) == pytest.approx(look[1] * 0.6 + look[2] * 0.1 + look[4] * 0.3)
    p = [0.2 * y for y in LABELS_1]
    look, expected = 1.0, 0.0
    for pr in p:
        expected += look * pr
        look *= (1 - pr) * 0.85
    assert float(by_callable) == pytest.approx(expected)


def test_precision_beyond_the_list_divides_by_k_unless_asked_otherwise():
    assert float(precision(*ONE, k=10)) == pytest.approx(3 / 10)
    assert float(precision(*ONE, k=10, denominator="length")) == pytest.approx(3 / 6)
    assert float(precision(*ONE)) == pytest.approx(3 / 6)


def test_average_precision_at_k_denominator_options():
    # relevant at ranks 2, 3, 5; R = 3; at k = 2 only rank 2 counts
    assert float(average_precision(*ONE, k=2)) == pytest.approx((1 / 2) / 3)
    assert float(average_precision(*ONE, k=2, denominator="min_k")) == pytest.approx((1 / 2) / 2)
    assert float(average_precision(*ONE, k=10, denominator="min_k")) == pytest.approx(AP_1)


def test_threshold_defines_relevance():
    # with threshold 2 only labels 3 and 2 (ranks 2 and 5) are relevant
    assert float(average_precision(*ONE, threshold=2)) == pytest.approx((1 / 2 + 2 / 5) / 2)
    assert float(reciprocal_rank(*ONE, threshold=3)) == pytest.approx(1 / 2)
    assert float(precision(*ONE, k=5, threshold=2)) == pytest.approx(2 / 5)


def test_ties_keep_the_original_row_order():
    # all scores equal: the ranking is the row order
    r = reciprocal_rank([1.0, 1.0, 1.0], [0, 0, 1], [0, 3])
    assert float(r) == pytest.approx(1 / 3)
    r = reciprocal_rank([1.0, 1.0, 1.0], [1, 0, 0], [0, 3])
    assert float(r) == 1.0
    # NaN scores rank last
    assert float(reciprocal_rank([np.nan, 0.0], [1, 0], [0, 2])) == pytest.approx(1 / 2)


def test_single_document_and_zero_length_queries():
    s, y, q = [0.3, 0.1, 0.2], [1, 0, 2], [0, 1, 1, 3]
    assert ndcg(s, y, q).values[0] == 1.0
    assert math.isnan(ndcg(s, y, q).values[1])  # no document at all: empty
    assert ndcg(s, y, q).n_empty == 1
    assert precision(s, y, q, k=3).values.tolist()[0] == pytest.approx(1 / 3)
    # third query: the label-2 row (score 0.2) outranks the label-0 row (score 0.1)
    assert dcg(s, y, q).values.tolist() == pytest.approx([1.0, 0.0, (2**2 - 1) / log2(2)])


def test_no_queries_gives_an_empty_result():
    r = ndcg([], [], [0])
    assert len(r) == 0 and math.isnan(r.mean) and r.n_empty == 0


# ----------------------------------------------------------------- empty conventions


@pytest.mark.parametrize(
    "metric", [ndcg, err, average_precision, reciprocal_rank, precision, pfound]
)
def test_empty_queries_follow_the_convention(metric):
    s, y, q = [3, 2, 1, 2, 1], [0, 1, 0, 0, 0], [0, 3, 5]
    skip, zero, one = (metric(s, y, q, empty=e) for e in ("skip", "zero", "one"))
    assert skip.n_empty == zero.n_empty == one.n_empty == 1
    assert math.isnan(skip[1]) and zero[1] == 0.0 and one[1] == 1.0
    assert skip[0] == zero[0] == one[0]
    assert skip.mean == pytest.approx(skip[0])
    assert zero.mean == pytest.approx(skip[0] / 2)
    assert one.mean == pytest.approx((skip[0] + 1) / 2)
    assert skip.n_used == 1 and one.n_used == 2


def test_dcg_scores_empty_queries_zero_and_counts_them():
    r = dcg([3, 2, 1, 2, 1], [0, 1, 0, 0, 0], [0, 3, 5], empty="skip")
    assert r.values[1] == 0.0 and r.n_empty == 1 and r.empty == "zero"


def test_relevant_documents_below_the_cutoff_score_zero_not_empty():
    r = ndcg([3, 2, 1], [0, 0, 2], [0, 3], k=2)
    assert r.values.tolist() == [0.0] and r.n_empty == 0


def test_all_queries_skipped_gives_nan_mean_without_warning(recwarn):
    r = ndcg([1, 2], [0, 0], [0, 1, 2])
    assert math.isnan(float(r)) and r.n_used == 0 and r.n_empty == 2
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


# ----------------------------------------------------------------- result object


def test_metric_result_behaves_like_its_values():
    r = average_precision(*BOTH)
    assert isinstance(r, MetricResult)
    assert float(r) == r.mean and len(r) == 2 and r[1] == r.values[1]
    np.testing.assert_array_equal(np.asarray(r), r.values)
    assert np.asarray(r, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError):
        r.values[0] = 1.0  # read-only
    text = r.summary()
    assert "ap" in text and "0.669" in text and "empty" in text and "'skip'" in text
    assert "n_empty=0" in repr(r) and "empty='skip'" in repr(r)
    assert r.sem == pytest.approx(np.std([AP_1, AP_2], ddof=1) / math.sqrt(2))


def test_metric_result_copies_its_input():
    v = np.array([0.5, np.nan])
    r = MetricResult("x", v, 1, "skip")
    v[0] = 0.0
    assert r.values[0] == 0.5 and r.mean == 0.5 and r.n_queries == 2


# ----------------------------------------------------------------- registry


@pytest.mark.parametrize(
    ("name", "func", "k", "result_name"),
    [
        ("ndcg@10", ndcg, 10, "ndcg@10"),
        ("map", average_precision, None, "ap"),
        ("mrr", reciprocal_rank, None, "rr"),
        ("p@5", precision, 5, "p@5"),
        ("err@10", err, 10, "err@10"),
        ("pfound@10", pfound, 10, "pfound@10"),
        ("dcg@5", dcg, 5, "dcg@5"),
        ("ap@10", average_precision, 10, "ap@10"),
        (" NDCG @ 3 ", ndcg, 3, "ndcg@3"),
    ],
)
def test_get_metric_parses_names(name, func, k, result_name):
    f = get_metric(name)
    r = f(*BOTH)
    assert r.name == result_name
    np.testing.assert_array_equal(r.values, func(*BOTH, k=k).values)


def test_get_metric_binds_options_and_rejects_unknown_names():
    assert get_metric("ndcg", empty="one")([1, 2], [0, 0], [0, 2]).values.tolist() == [1.0]
    for bad in ("ndcgg@10", "ndcg@", "ndcg@-1", "ndcg@0", "", "@5"):
        with pytest.raises(InputError, match="metric|k must"):
            get_metric(bad)
    with pytest.raises(InputError, match="already sets k"):
        get_metric("ndcg@5", k=3)
    assert {"ndcg", "dcg", "err", "ap", "map", "rr", "mrr", "p", "pfound"} <= set(METRICS)


# ----------------------------------------------------------------- input errors


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scores": [1, 2, 3]}, "same length"),
        ({"labels": [0, np.nan]}, "labels must be finite"),
        ({"labels": [0, np.inf]}, "labels must be finite"),
        ({"labels": [0, -1]}, "labels must be >= 0"),
        ({"k": -1}, "k must be"),
        ({"k": 0}, "k must be"),
        ({"k": 2.5}, "k must be"),
        ({"k": True}, "k must be"),
        ({"qptr": [0, 3]}, "qptr"),
        ({"qptr": [1, 2]}, "qptr"),
        ({"qptr": [0, 2, 1, 2]}, "qptr"),
        ({"empty": "nan"}, "empty"),
        ({"scores": [[1, 2]]}, "scores must be 1-d"),
        ({"scores": ["a", "b"]}, "scores must be numeric"),
        ({"labels": [[0, 1]]}, "labels must be 1-d"),
    ],
)
def test_bad_input_raises_input_error_naming_the_argument(kwargs, match):
    args = {"scores": [1.0, 2.0], "labels": [0, 1], "qptr": [0, 2]} | kwargs
    s, y, q = args.pop("scores"), args.pop("labels"), args.pop("qptr")
    for metric in (dcg, ndcg, err, average_precision, reciprocal_rank, precision, pfound):
        with pytest.raises(InputError, match=match):
            metric(s, y, q, **args)


def test_metric_specific_options_are_checked():
    with pytest.raises(InputError, match="gain"):
        ndcg(*ONE, gain="cubic")
    with pytest.raises(InputError, match="max_grade"):
        err(*ONE, max_grade=2)
    with pytest.raises(InputError, match="threshold"):
        average_precision(*ONE, threshold=0)
    with pytest.raises(InputError, match="denominator"):
        average_precision(*ONE, denominator="k")
    with pytest.raises(InputError, match="denominator"):
        precision(*ONE, denominator="relevant")
    with pytest.raises(InputError, match="p_break"):
        pfound(*ONE, p_break=1.5)
    with pytest.raises(InputError, match="relevance_to_probability"):
        pfound(*ONE, relevance_to_probability=[0, 0.5])  # grade 3 has no entry
    with pytest.raises(InputError, match="relevance_to_probability"):
        pfound(*ONE, relevance_to_probability="identity")  # labels above 1
    with pytest.raises(InputError, match="relevance_to_probability"):
        pfound(*ONE, relevance_to_probability=lambda y: y[:2])
    with pytest.raises(InputError, match="gain='linear'"):
        ndcg([1, 2], [0, 2000], [0, 2])


# ----------------------------------------------------------------- reference implementation


def ranked_labels(scores, labels):
    """Labels of one query from rank 1 down: descending score, ties by row, NaN last."""
    key = [(math.inf if math.isnan(s) else -s, i) for i, s in enumerate(scores)]
    return [labels[i] for _, i in sorted(key)]


def ref_dcg(scores, labels, k, gain="exponential"):
    g = (lambda y: 2**y - 1) if gain == "exponential" else (lambda y: y)
    top = ranked_labels(scores, labels)[:k]
    return sum(g(y) / math.log2(j + 2) for j, y in enumerate(top))


def ref_ndcg(scores, labels, k, gain="exponential"):
    ideal = ref_dcg(sorted(labels, reverse=True), sorted(labels, reverse=True), k, gain)
    return None if ideal == 0 else ref_dcg(scores, labels, k, gain) / ideal


def ref_err(scores, labels, k, max_grade):
    if max(labels, default=0) == 0:
        return None
    total, p_continue = 0.0, 1.0
    for r, y in enumerate(ranked_labels(scores, labels)[:k], start=1):
        stop = (2**y - 1) / 2**max_grade
        total += p_continue * stop / r
        p_continue *= 1 - stop
    return total


def ref_ap(scores, labels, k, threshold, denominator):
    n_rel = sum(y >= threshold for y in labels)
    if n_rel == 0:
        return None
    hits, total = 0, 0.0
    for j, y in enumerate(ranked_labels(scores, labels)[:k], start=1):
        if y >= threshold:
            hits += 1
            total += hits / j
    denom = n_rel if denominator == "relevant" or k is None else min(n_rel, k)
    return total / denom


def ref_rr(scores, labels, k, threshold):
    if not any(y >= threshold for y in labels):
        return None
    for j, y in enumerate(ranked_labels(scores, labels)[:k], start=1):
        if y >= threshold:
            return 1 / j
    return 0.0


def ref_precision(scores, labels, k, threshold, denominator):
    if not any(y >= threshold for y in labels):
        return None
    hits = sum(y >= threshold for y in ranked_labels(scores, labels)[:k])
    if k is None:
        return hits / len(labels)
    return hits / (k if denominator == "k" else min(k, len(labels)))


def ref_pfound(scores, labels, k, prob, p_break):
    if not any(prob(y) > 0 for y in labels):
        return None
    total, look = 0.0, 1.0
    for y in ranked_labels(scores, labels)[:k]:
        total += look * prob(y)
        look *= (1 - prob(y)) * (1 - p_break)
    return total


def ref_probability(mapping, max_grade):
    """pFound's label -> probability map, for one of the mappings the tests use."""
    if mapping == "exponential":
        return lambda y: (2**y - 1) / 2**max_grade if max_grade else 0.0
    if mapping == "linear":
        return lambda y: y / max_grade if max_grade else 0.0
    return lambda y: mapping[int(y)]


FILL = {"skip": math.nan, "zero": 0.0, "one": 1.0}


def reference(metric, queries, k, empty, **options):
    """Per-query values of ``metric`` from the plain-loop reference, empty convention applied."""
    labels_all = [y for _, ys in queries for y in ys]
    max_grade = options.pop("max_grade", None) or max(labels_all, default=0)
    prob = ref_probability(options.get("mapping", "exponential"), max_grade)
    out = []
    for scores, labels in queries:
        if metric == "dcg":
            v = ref_dcg(scores, labels, k, options.get("gain", "exponential"))
        elif metric == "ndcg":
            v = ref_ndcg(scores, labels, k, options.get("gain", "exponential"))
        elif metric == "err":
            v = ref_err(scores, labels, k, max_grade)
        elif metric == "ap":
            v = ref_ap(
                scores,
                labels,
                k,
                options.get("threshold", 1),
                options.get("denominator", "relevant"),
            )
        elif metric == "rr":
            v = ref_rr(scores, labels, k, options.get("threshold", 1))
        elif metric == "p":
            v = ref_precision(
                scores, labels, k, options.get("threshold", 1), options.get("denominator", "k")
            )
        else:
            v = ref_pfound(scores, labels, k, prob, options.get("p_break", 0.15))
        if v is None:  # no relevant document
            v = 0.0 if metric == "dcg" else FILL[empty]
        out.append(v)
    return np.array(out, dtype=np.float64)


def flatten(queries):
    scores = np.array([s for ss, _ in queries for s in ss], dtype=np.float64)
    labels = np.array([y for _, ys in queries for y in ys], dtype=np.float64)
    qptr = np.concatenate(([0], np.cumsum([len(ys) for _, ys in queries]))).astype(np.int64)
    return scores, labels, qptr


@st.composite
def ranking_data(draw):
    """Queries of 0-8 documents with tied scores, occasional NaN scores, labels 0-4."""
    n_q = draw(st.integers(0, 6))
    score = st.sampled_from([0.0, 0.5, 1.0, 1.0, 2.0, -1.0, math.nan])
    queries = []
    for _ in range(n_q):
        n = draw(st.integers(0, 8))
        scores = draw(st.lists(score, min_size=n, max_size=n))
        labels = draw(st.lists(st.sampled_from([0, 0, 0, 1, 2, 3, 4]), min_size=n, max_size=n))
        queries.append((scores, labels))
    return queries


CASES = [
    ("dcg", dcg, {}),
    ("dcg", dcg, {"gain": "linear"}),
    ("ndcg", ndcg, {}),
    ("ndcg", ndcg, {"gain": "linear"}),
    ("err", err, {}),
    ("err", err, {"max_grade": 4}),
    ("ap", average_precision, {}),
    ("ap", average_precision, {"denominator": "min_k", "threshold": 2}),
    ("rr", reciprocal_rank, {}),
    ("rr", reciprocal_rank, {"threshold": 3}),
    ("p", precision, {}),
    ("p", precision, {"denominator": "length"}),
    ("pfound", pfound, {}),
    ("pfound", pfound, {"mapping": "linear", "p_break": 0.3}),
    ("pfound", pfound, {"mapping": [0.0, 0.1, 0.3, 0.6, 0.9]}),
]


def call(func, queries, k, empty, options):
    options = dict(options)
    mapping = options.pop("mapping", None)
    if mapping is not None:
        options["relevance_to_probability"] = mapping
    return func(*flatten(queries), k=k, empty=empty, **options)


@pytest.mark.parametrize(
    ("name", "func", "options"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
@pytest.mark.parametrize("path", ["padded", "lexsort", "blocks"])
@settings(max_examples=30, deadline=None)
@given(
    queries=ranking_data(),
    k=st.one_of(st.none(), st.integers(1, 10)),
    empty=st.sampled_from(["skip", "zero", "one"]),
)
def test_every_metric_matches_the_plain_loop_reference(
    name, func, options, path, queries, k, empty
):
    # "lexsort" forces the ragged-data route through clickrank._core._segments.rank_order;
    # "blocks" cuts the queries into blocks of about 5 rows (as 2**18 rows are cut at scale)
    with (
        mock.patch.object(M, "_dense", (lambda q: False) if path == "lexsort" else M._dense),
        mock.patch.object(M, "_BLOCK_ROWS", 5 if path == "blocks" else M._BLOCK_ROWS),
    ):
        result = call(func, queries, k, empty, options)
    expected = reference(name, queries, k, empty, **options)
    np.testing.assert_allclose(result.values, expected, rtol=1e-12, atol=1e-12)
    assert result.n_queries == len(queries)
    # empty = no relevant document; DCG counts the queries NDCG would skip
    skipped = reference(
        "ndcg" if name == "dcg" else name, queries, k, "skip", **({} if name == "dcg" else options)
    )
    assert result.n_empty == int(np.isnan(skipped).sum())
    assert result.empty == ("zero" if name == "dcg" else empty)


@settings(max_examples=60, deadline=None)
@given(queries=ranking_data(), k=st.one_of(st.none(), st.integers(1, 10)), data=st.data())
def test_permuting_queries_permutes_values(queries, k, data):
    perm = data.draw(st.permutations(range(len(queries))))
    shuffled = [queries[i] for i in perm]
    for _, func, options in CASES[::2]:
        a = call(func, queries, k, "skip", options)
        b = call(func, shuffled, k, "skip", options)
        np.testing.assert_allclose(b.values, a.values[list(perm)], rtol=1e-12)
        assert a.n_empty == b.n_empty


def test_ragged_data_takes_the_lexsort_route_and_agrees_with_the_reference():
    rng = np.random.default_rng(7)
    sizes = [1500, 1, 3, 0, 7, 2]
    queries = [
        (rng.integers(0, 20, n).astype(float).tolist(), rng.integers(0, 5, n).tolist())
        for n in sizes
    ]
    assert not M._dense(flatten(queries)[2])
    for name, func, options in CASES:
        for k in (None, 5):
            np.testing.assert_allclose(
                call(func, queries, k, "skip", options).values,
                reference(name, queries, k, "skip", **options),
                rtol=1e-12,
                atol=1e-12,
            )


def test_large_uniform_input_agrees_with_the_reference_on_a_sample():
    rng = np.random.default_rng(3)
    n_q, n = 2000, 30
    s = rng.normal(size=n_q * n).round(1)  # rounded: many ties
    y = rng.integers(0, 5, n_q * n).astype(float)
    q = np.arange(n_q + 1) * n
    r = ndcg(s, y, q, k=10)
    sample = rng.choice(n_q, 50, replace=False)
    queries = [(s[q[i] : q[i + 1]].tolist(), y[q[i] : q[i + 1]].tolist()) for i in sample]
    np.testing.assert_allclose(r.values[sample], reference("ndcg", queries, 10, "skip"), rtol=1e-12)


def test_examples_in_docs_metrics_md_run():
    path = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"
    failures, tried = doctest.testfile(str(path), module_relative=False)
    assert tried > 5 and failures == 0


def test_ties_keep_row_order_and_match_trec_eval_after_sorting_ids():
    """The tie rule of docs/metrics.md: clickrank keeps row order; trec_eval and gdeval
    rank tied documents by docno, descending (string order: "d9" before "d10")."""
    from clickrank.metrics import ndcg

    docs = np.array(["d1", "d10", "d2", "d9"])
    labels = np.array([0.0, 2.0, 1.0, 0.0])
    scores = np.array([1.0, 1.0, 1.0, 1.0])  # all tied
    qptr = np.array([0, 4])
    ideal = 3 / np.log2(2) + 1 / np.log2(3)
    # clickrank: row order d1, d10, d2, d9 -> gains 0, 3, 1, 0
    row_order = (3 / np.log2(3) + 1 / np.log2(4)) / ideal
    assert float(ndcg(scores, labels, qptr)[0]) == pytest.approx(row_order)
    # trec_eval / gdeval: docno descending -> d9, d2, d10, d1 -> gains 0, 1, 3, 0
    trec = (1 / np.log2(3) + 3 / np.log2(4)) / ideal
    order = np.argsort(docs)[::-1]  # string order, descending
    assert docs[order].tolist() == ["d9", "d2", "d10", "d1"]
    assert float(ndcg(scores[order], labels[order], qptr)[0]) == pytest.approx(trec)
    assert row_order != pytest.approx(trec)
