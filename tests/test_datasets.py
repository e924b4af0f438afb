"""RankingData, LETOR/parquet/frame IO, splits and the synthetic generator."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pytest
from scipy import special, stats

import clickrank as cr
from clickrank import DataFormatError, InputError, load_letor
from clickrank.datasets import load, synthetic


def _toy() -> cr.RankingData:
    X = np.arange(12, dtype=np.float32).reshape(6, 2) / 4
    return cr.RankingData(
        X,
        np.array([0, 3, 1, 0, 2, 1.0]),
        np.array([0, 4, 6]),
        np.array([7, 9]),
        np.array(["a", "b", "c", "d", "a", "z"]),
    )


# -- RankingData ------------------------------------------------------------


def test_ranking_data_validates_shapes():
    with pytest.raises(cr.InputError, match="qptr"):
        cr.RankingData(np.zeros((3, 1)), None, np.array([0, 2]))
    with pytest.raises(cr.InputError, match="y must have shape"):
        cr.RankingData(np.zeros((3, 1)), np.zeros(2), np.array([0, 3]))
    with pytest.raises(cr.InputError, match="finite"):
        cr.RankingData(np.zeros((2, 1)), np.array([0, np.nan]), np.array([0, 2]))


def test_subset_gathers_whole_queries_in_the_given_order():
    d = _toy()
    s = d.subset([1, 0])
    assert s.qid.tolist() == [9, 7]
    assert s.qptr.tolist() == [0, 2, 6]
    assert s.doc.tolist() == ["a", "z", "a", "b", "c", "d"]
    np.testing.assert_array_equal(s.X, np.concatenate([d.X[4:], d.X[:4]]))
    np.testing.assert_array_equal(s.y, np.concatenate([d.y[4:], d.y[:4]]))


def test_split_queries_partitions_and_is_seeded():
    d = synthetic(100, 5, seed=3)
    parts = cr.split_queries(d, [0.6, 0.2, 0.2], seed=1)
    assert [p.n_queries for p in parts] == [60, 20, 20]
    ids = np.concatenate([p.X[p.qptr[:-1], 5] for p in parts])  # x5 is constant per query
    assert len(np.unique(ids)) == 100
    again = cr.split_queries(d, [0.6, 0.2, 0.2], seed=1)
    assert all(np.array_equal(a.X, b.X) for a, b in zip(parts, again, strict=True))
    other = cr.split_queries(d, [0.6, 0.2, 0.2], seed=2)
    assert not np.array_equal(parts[0].X, other[0].X)
    with pytest.raises(cr.InputError, match="sum to at most 1"):
        cr.split_queries(d, [0.7, 0.5])
    with pytest.raises(cr.InputError, match="asks for|ask for"):
        cr.split_queries(d, [80, 30])


def test_subsample_by_count_and_fraction():
    d = synthetic(50, 3, seed=0)
    assert d.subsample(10, seed=0).n_queries == 10
    assert d.subsample(0.5, seed=0).n_queries == 25
    with pytest.raises(cr.InputError):
        d.subsample(0, seed=0)


# -- synthetic ----------------------------------------------------------------


def test_synthetic_shapes_and_query_feature():
    d = synthetic(1300, 30, seed=0)
    assert (d.n_queries, d.n_docs, d.n_features) == (1300, 39000, 6)
    assert set(np.unique(d.y)) <= {0, 1, 2, 3, 4}
    x5 = d.X[:, 5].reshape(1300, 30)
    assert np.all(x5 == x5[:, :1])  # constant within each query
    assert np.array_equal(synthetic(20, 4, seed=5).X, synthetic(20, 4, seed=5).X)


def _label_distribution(noise: float = 0.7) -> np.ndarray:
    """P(label = g) for the DESIGN §4 generator, by quadrature (independent of the code).

    z = (x0 + 0.7 x1 + 1.5 x5 + eps) + x2 x3 where the bracket is N(0, s^2),
    s^2 = 1 + 0.49 + 2.25 + noise^2, and x2, x3 are independent N(0, 1).
    """
    s = np.sqrt(1 + 0.49 + 2.25 + noise**2)
    nodes, weights = special.roots_hermitenorm(80)
    weights = weights / weights.sum()
    prod = np.multiply.outer(nodes, nodes).ravel()
    w = np.multiply.outer(weights, weights).ravel()
    cdf = np.array([np.sum(w * stats.norm.cdf((t - prod) / s)) for t in (1, 2, 3, 4)])
    return np.diff(np.concatenate([[0], cdf, [1]]))


def test_synthetic_label_distribution_matches_the_model():
    d = synthetic(4000, 30, seed=11)
    p = _label_distribution()
    freq = np.bincount(d.y.astype(int), minlength=5) / d.n_docs
    # labels within a query are dependent through x5: inflate the SE by the design effect
    se = np.sqrt(p * (1 - p) / d.n_queries)
    assert np.all(np.abs(freq - p) < 4 * se), (freq, p)


# -- LETOR -------------------------------------------------------------------


def test_letor_roundtrip_keeps_everything(tmp_path):
    d = _toy()
    path = cr.save_letor(d, tmp_path / "toy.txt")
    back = cr.load_letor(path)
    np.testing.assert_array_equal(back.X, d.X)
    np.testing.assert_array_equal(back.y, d.y)
    assert back.qptr.tolist() == d.qptr.tolist()
    assert back.qid.tolist() == [7, 9]
    assert back.doc.tolist() == d.doc.tolist()
    with pytest.raises(cr.InputError, match="exists"):
        cr.save_letor(d, path)


def test_letor_sparse_lines_comments_and_blank_lines(tmp_path):
    f = tmp_path / "s.txt"
    f.write_text("# header comment\n2 qid:a 3:0.5 #docid = x1\n\n0 qid:a 1:1e-1\n1 qid:b 2:-2\n")
    d = cr.load_letor(f)
    assert d.n_features == 3 and d.qid.tolist() == ["a", "b"]
    np.testing.assert_allclose(d.X, [[0, 0, 0.5], [0.1, 0, 0], [0, -2, 0]])
    assert d.doc.tolist() == [0, 1, 0]  # no docid on every line: index within query


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        ("1 qid:1 1:0.5\n0 1:0.2\n", 2, "missing 'qid:"),
        ("1 qid:1 1:0.5\nx qid:1 1:0.2\n", 2, "label 'x'"),
        ("1 qid:1 1:abc\n", 1, "not a finite number"),
        ("1 qid:1 0:0.3\n", 1, "must be >= 1"),
        ("1 qid:1 -2:0.3\n", 1, "must be >= 1"),
        ("1 qid:1 1:0.3 junk\n", 1, "not '<index>:<value>'"),
        ("1 qid:1 1:0\n1 qid:2 1:0\n0 qid:1 1:1\n", 3, "not contiguous"),
        ("1 qid:1 1:0 #docid = d\n0 qid:1 1:1 #docid = d\n", 2, "appears twice"),
    ],
)
def test_malformed_letor_names_file_and_line(tmp_path, content, line, message):
    f = tmp_path / "bad.txt"
    f.write_text(content)
    with pytest.raises(cr.DataFormatError, match=message) as info:
        cr.load_letor(f)
    assert info.value.line == line
    assert str(info.value).startswith(f"{f}:{line}:")


def test_letor_with_lightgbm_query_file(tmp_path):
    f = tmp_path / "g.txt"
    f.write_text("1 1:1\n0 1:2\n2 1:3\n")
    (tmp_path / "g.txt.query").write_text("2\n1\n")
    d = cr.load_letor(f)
    assert d.qptr.tolist() == [0, 2, 3] and d.y.tolist() == [1, 0, 2]
    (tmp_path / "g.txt.query").write_text("2\n2\n")
    with pytest.raises(cr.DataFormatError, match="sum to 4"):
        cr.load_letor(f)


def test_mq2008_loads_with_the_documented_counts(mq2008):
    sizes = {}
    for split in ("train", "vali", "test"):
        d = cr.load_letor(mq2008 / f"{split}.txt")
        assert d.n_features == 46
        sizes[split] = (d.n_queries, d.n_docs)
    assert sizes == {"train": (471, 9630), "vali": (157, 2707), "test": (156, 2874)}
    train = cr.load_letor(mq2008 / "train.txt")
    assert np.bincount(train.y.astype(int)).tolist() == [7820, 1223, 587]
    assert str(train.doc[0]).startswith("GX")


# -- frames and parquet --------------------------------------------------------


def test_frame_and_parquet_roundtrip(tmp_path):
    d = _toy()
    back = cr.from_frame(d.to_frame())
    np.testing.assert_array_equal(back.X, d.X)
    assert back.qid.tolist() == [7, 9] and back.doc.tolist() == d.doc.tolist()
    pdf = pd.DataFrame(d.to_frame().to_dict(as_series=False))
    assert cr.from_frame(pdf).qptr.tolist() == [0, 4, 6]
    path = cr.save_parquet(d, tmp_path / "d.parquet")
    p = load(path)
    np.testing.assert_array_equal(p.X, d.X)
    np.testing.assert_array_equal(p.y, d.y)


def test_frame_errors_name_the_column():
    frame = pl.DataFrame({"query": [1, 2, 1], "f1": [0.1, 0.2, 0.3]})
    with pytest.raises(cr.DataFormatError, match="not contiguous"):
        cr.from_frame(frame)
    with pytest.raises(cr.DataFormatError, match="missing query column"):
        cr.from_frame(frame.rename({"query": "qid"}))
    with pytest.raises(cr.DataFormatError, match="column 'f1'"):
        cr.from_frame(pd.DataFrame({"query": [1, 1], "f1": [0.1, None]}))


def test_an_absurd_feature_index_is_refused_with_its_line(tmp_path):
    path = tmp_path / "big.txt"
    path.write_text("1 qid:1 1:0.5 2:0.1\n0 qid:1 1:0.1 1000000000:1\n2 qid:2 1:0.3 2:0.2\n")
    with pytest.raises(
        DataFormatError,
        match=r"big.txt:2: feature index in '1000000000:1' is "
        r"implausible: 3 rows x 1,000,000,000 features "
        r"would take 11.2 GiB for 6 values",
    ):
        load_letor(path)
    with pytest.raises(InputError, match="n_features=1,000,000,000 is implausible"):
        load_letor(tmp_path / "big.txt", n_features=10**9)


def test_a_feature_index_repeated_on_a_line_is_refused(tmp_path):
    path = tmp_path / "dup.txt"
    path.write_text("1 qid:1 1:0.5 2:0.1\n0 qid:1 2:0.1 1:0.2 2:1\n")
    with pytest.raises(DataFormatError, match=r"dup.txt:2: feature index in '2:1' appears twice"):
        load_letor(path)


def test_wide_but_dense_files_are_read(tmp_path):
    rows = ["1 qid:1 " + " ".join(f"{j}:0.5" for j in range(1, 701))] * 3
    path = tmp_path / "wide.txt"
    path.write_text("\n".join(rows) + "\n")
    assert load_letor(path).n_features == 700
