"""Loaders of real public click logs, checked against the counts in each PROVENANCE.md."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from clickrank import DataFormatError
from clickrank.propensity import estimate_propensities
from clickrank.publiclogs import load_trec_session, load_yandex_sample


@pytest.fixture(scope="module")
def yandex_dir(shared_data: Path) -> Path:
    d = shared_data / "yandex_relpred2011_pyclick_sample"
    if not (d / "trainSample").is_file():
        pytest.skip(f"Yandex sample not found in {d}")
    return d


@pytest.fixture(scope="module")
def trec_dir(shared_data: Path) -> Path:
    d = shared_data / "trec_session2014_clicks_ncm_demo"
    if not (d / "train_per_query_quid.txt").is_file():
        pytest.skip(f"TREC 2014 session data not found in {d}")
    return d


@pytest.fixture(scope="module")
def yandex_train(yandex_dir):
    return load_yandex_sample(yandex_dir / "trainSample", with_info=True)


@pytest.mark.parametrize(
    "name, sessions, events, outside, with_click, ctr",
    [
        (
            "trainSample",
            35_064,
            50_321,
            417,
            23_284,
            [0.257, 0.249, 0.170, 0.154, 0.106, 0.073, 0.069, 0.047, 0.050, 0.045],
        ),
        (
            "testSample",
            21_413,
            35_853,
            276,
            15_295,
            [0.391, 0.255, 0.188, 0.143, 0.111, 0.095, 0.081, 0.065, 0.067, 0.063],
        ),
    ],
)
def test_yandex_counts_match_provenance(
    yandex_dir, name, sessions, events, outside, with_click, ctr
):
    log, info = load_yandex_sample(yandex_dir / name, with_info=True)
    assert info["sessions"] == sessions and info["click_events"] == events
    assert info["clicks_outside_list"] == outside and info["queries"] == 20
    assert log.height == 10 * sessions
    assert log.schema["session"] == pl.UInt64 and log.schema["position"] == pl.UInt16
    assert log.schema["click"] == pl.Boolean
    # PROVENANCE counts sessions with any click event, including clicks outside the top 10
    assert info["sessions_with_click_event"] == with_click
    in_list = log.group_by("session").agg(pl.col("click").any())["click"].sum()
    assert with_click - outside <= in_list < with_click
    by_pos = log.group_by("position").agg(pl.col("click").mean()).sort("position")
    # PROVENANCE rounds to 3 decimals
    np.testing.assert_allclose(by_pos["click"].to_numpy(), ctr, atol=0.0015)
    # clicks inside the list plus skipped ones plus repeats account for every click event
    assert log["n_clicks"].sum() + outside == events


def test_yandex_first_record_is_parsed_exactly(yandex_train):
    log, _ = yandex_train
    first = log.filter(pl.col("session") == 0).sort("position")
    assert first["query"].unique().to_list() == ["98435_1"]
    assert first["doc"].to_list() == [
        232429,
        688835,
        50189248,
        16704940,
        688844,
        2105824,
        688847,
        48780108,
        688841,
        102825202,
    ]
    # clicks "688835 , 232429 , 16704940": positions 2, 1, 4
    assert first["click"].to_list() == [True, True, False, True] + [False] * 6


def test_yandex_bad_records_name_the_line(tmp_path):
    good = "q1\t1,2,3 : 2 ;q1\t1,2,3 :;"
    for text, msg, line in [
        (good + "\nq2 1,2,3 : 1;", "without a tab", 2),
        (good + "\n\nq2\t1,2,3 1;", "without ':'", 3),
        ("q2\t1,,3 : 1;", "not an integer", 1),
        ("q2\t1,x,3 : 1;", "not an integer", 1),
        (good + "\nq2\t1,2,1 : 1;", "listed twice", 2),
        ("q2\t1,2,3 : a;", "clicked id", 1),
    ]:
        path = tmp_path / "sample"
        path.write_text(text)
        with pytest.raises(DataFormatError, match=msg) as err:
            load_yandex_sample(path)
        assert err.value.line == line and err.value.path == str(path)


def test_yandex_tolerates_spacing_and_empty_lines(tmp_path):
    path = tmp_path / "sample"
    path.write_text("q1\t 7 , 8 ,9 :9 ,  7 , 7 ;  \n\nq1\t7,8,9 :  ; q1\t7,8,9 : 5;\n")
    log, info = load_yandex_sample(path, with_info=True)
    assert info["sessions"] == 3 and info["clicks_outside_list"] == 1
    assert info["repeat_clicks"] == 1
    assert log.filter(pl.col("session") == 0)["click"].to_list() == [True, False, True]
    assert log["click"].sum() == 2


def test_trec_counts_match_provenance(trec_dir):
    log = load_trec_session(trec_dir / "train_per_query_quid.txt")
    assert log.height == 2872 * 10 and log["session"].n_unique() == 2872
    assert log["click"].sum() == 1293 and log["search_session"].n_unique() == 1003
    assert log["query"].n_unique() == 2055 and log["doc"].n_unique() == 9482
    ctr = log.group_by("position").agg(pl.col("click").mean()).sort("position")["click"]
    np.testing.assert_allclose(
        ctr.to_numpy(),
        [0.132, 0.088, 0.068, 0.045, 0.033, 0.025, 0.021, 0.014, 0.014, 0.012],
        atol=0.0015,
    )


def test_trec_labels_match_provenance(trec_dir):
    lab = load_trec_session(trec_dir / "human_label_for_GraphCM_per_query_quid.txt")
    counts = dict(lab["label"].value_counts().iter_rows())
    assert counts == {-2.0: 497, 0.0: 5063, 1.0: 2170, 2.0: 692, 3.0: 101, 4.0: 37}
    joined = load_trec_session(
        trec_dir / "train_per_query_quid.txt",
        labels=trec_dir / "human_label_for_GraphCM_per_query_quid.txt",
    )
    assert joined.height == 28720 and joined["label"].is_not_null().sum() > 0
    # joining never changes the impressions
    assert joined["click"].sum() == 1293


def test_trec_bad_lines_name_the_line(tmp_path):
    good = "1\t2\t[3, 4]\t[1, 1]\t[0, 1]\n"
    for text, msg, line in [
        (good + "1\t2\t[3, 4]\t[1, 1]\n", "fields", 2),
        (good + "1\t2\t[3, 4]\t[1, 1]\t[0]\n", "differ in length", 2),
        (good + "1\t2\t[3, 4]\t[1, 1]\t[0, 2]\n", "0 or 1", 2),
        (good + "x\t2\t[3, 4]\t[1, 1]\t[0, 1]\n", "session id", 2),
        (good + "1\t2\t[3, a]\t[1, 1]\t[0, 1]\n", "not an integer", 2),
    ]:
        path = tmp_path / "t.txt"
        path.write_text(text)
        with pytest.raises(DataFormatError, match=msg) as err:
            load_trec_session(path)
        assert err.value.line == line


def test_missing_file_is_a_data_format_error(tmp_path):
    with pytest.raises(DataFormatError, match="no such file"):
        load_yandex_sample(tmp_path / "nope")


@pytest.mark.slow
def test_yandex_position_bias_by_harvesting_and_em(yandex_train):
    log, _ = yandex_train
    allp = estimate_propensities(log, method="harvest-allpairs")
    emr = estimate_propensities(log, method="em", n_boot=20, seed=0)
    for r in (allp, emr):
        ci = r.conf_int(0.01).select("lower", "upper").to_numpy()
        # real position bias: rank 2 is examined less than rank 1, rank 10 less than rank 2
        assert ci[1, 1] < 1.0 and ci[9, 1] < ci[1, 0]
        assert not any("not identified" in w for w in r.warnings)
    # the two estimators use the same (query, doc) variation and must broadly agree
    z = np.abs(np.log(allp.theta[1:]) - np.log(emr.theta[1:])) / np.hypot(allp.se[1:], emr.se[1:])
    assert np.all(z < 3.5)


@pytest.mark.parametrize("text", ["", "\n\n", "  \n"])
def test_an_empty_trec_file_is_one_clear_error(tmp_path, text):
    path = tmp_path / "empty.txt"
    path.write_text(text)
    with pytest.raises(DataFormatError, match="empty.txt: no impressions found"):
        load_trec_session(path)
