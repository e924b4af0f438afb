"""Click-log schema, validation, IO and aggregations."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from clickrank import InputError, LogSchemaError
from clickrank._core._io import LEDGER
from clickrank.clicklog import (
    METADATA_KEY,
    LogStats,
    counts_by_intervention_position,
    counts_by_query_doc_position,
    counts_by_ranker_query_doc_position,
    ctr_by_position,
    ctr_by_position_and_label,
    lazy_log,
    mean_by_position,
    read_log,
    read_log_metadata,
    select_intervention,
    share_at_least_by_position,
    skip_above_by_distance,
    skip_above_pairs,
    validate_log,
    write_log,
)
from clickrank.clickmodels import make_click_model
from clickrank.datasets import synthetic
from clickrank.policies import DeterministicPolicy, MixturePolicy, UniformRandom
from clickrank.policies.production import production_ranker
from clickrank.simulation import Swap, simulate


@pytest.fixture(scope="module")
def log() -> pl.DataFrame:
    data = synthetic(40, 12, seed=0)
    policy = MixturePolicy([DeterministicPolicy(data.X[:, 0]), UniformRandom()])
    return simulate(
        data,
        policy=policy,
        click_model=make_click_model("pbm"),
        n_sessions=3000,
        interventions=Swap(0.2),
        top_k=8,
        seed=0,
    )


def _set(frame, session, position, column, value):
    hit = (pl.col("session") == session) & (pl.col("position") == position)
    return frame.with_columns(pl.when(hit).then(value).otherwise(pl.col(column)).alias(column))


def test_simulated_log_is_valid_and_keeps_canonical_dtypes(log):
    out = validate_log(log)
    assert out.schema == log.schema
    assert out.schema["session"] == pl.UInt64 and out.schema["position"] == pl.UInt16
    assert out.schema["click"] == pl.Boolean and out.schema["intervention"] == pl.Categorical


def test_validate_casts_plain_types_to_the_schema():
    raw = pl.DataFrame(
        {
            "session": [0, 0, 1],
            "query": ["a", "a", "b"],
            "position": [1, 2, 1],
            "doc": ["x", "y", "x"],
            "click": [1, 0, 0],
            "intervention": ["none", "none", "swap"],
        }
    )
    out = validate_log(raw)
    assert out.schema["session"] == pl.UInt64
    assert out.schema["position"] == pl.UInt16
    assert out["click"].to_list() == [True, False, False]
    assert out.schema["intervention"] == pl.Categorical
    lazy = validate_log(raw.lazy())
    assert isinstance(lazy, pl.LazyFrame)
    assert_frame_equal(lazy.collect(), out)


def test_missing_column_is_named(log):
    with pytest.raises(LogSchemaError, match=r"column 'doc'.*missing required column"):
        validate_log(log.drop("doc"))


def test_wrong_dtype_is_named_before_any_data_is_read(log):
    lazy = log.lazy().with_columns(pl.col("click").cast(pl.Float64))
    with pytest.raises(LogSchemaError, match=r"column 'click'.*dtype Float64"):
        validate_log(lazy, check_values=False)


def test_duplicated_position_names_session_and_position(log):
    bad = _set(log, 5, 3, "position", pl.lit(2, dtype=pl.UInt16))
    with pytest.raises(LogSchemaError, match=r"session 5, position 2 appears 2 times"):
        validate_log(bad)


def test_null_click_names_the_row(log):
    bad = _set(log, 9, 4, "click", pl.lit(None, dtype=pl.Boolean))
    with pytest.raises(LogSchemaError, match=r"column 'click'.*null.*session 9, position 4"):
        validate_log(bad)


def test_position_zero_is_rejected(log):
    bad = _set(log.with_columns(pl.col("position").cast(pl.Int64)), 7, 1, "position", pl.lit(0))
    with pytest.raises(LogSchemaError, match=r"1-based.*session 7, position 0"):
        validate_log(bad)


def test_gap_in_positions_is_rejected(log):
    bad = log.filter(~((pl.col("session") == 3) & (pl.col("position") == 4)))
    with pytest.raises(LogSchemaError, match=r"session 3 are not contiguous"):
        validate_log(bad)


def test_two_queries_in_one_session_are_rejected(log):
    bad = _set(log, 2, 2, "query", pl.lit(-1, dtype=pl.Int64))
    with pytest.raises(LogSchemaError, match=r"column 'query'.*session 2 mixes 2 queries"):
        validate_log(bad)


def test_integer_click_outside_0_1_is_rejected(log):
    bad = _set(log.with_columns(pl.col("click").cast(pl.Int8)), 1, 1, "click", pl.lit(2))
    with pytest.raises(LogSchemaError, match=r"column 'click'.*session 1, position 1"):
        validate_log(bad)


def test_errors_name_the_source_file(log, tmp_path):
    path = tmp_path / "bad.parquet"
    log.drop("click").write_parquet(path)
    with pytest.raises(LogSchemaError, match="bad.parquet"):
        read_log(path)


@pytest.mark.parametrize("name", ["log.parquet", "log.csv"])
def test_write_then_read_round_trips(log, tmp_path, name):
    path = write_log(log, tmp_path / name)
    back = read_log(path, lazy=False)
    if name.endswith(".csv"):  # CSV keeps values, categories come back as Categorical
        assert back.schema == log.schema
    assert_frame_equal(back, log, categorical_as_str=True)


def test_read_folder_and_glob(log, tmp_path):
    folder = tmp_path / "parts"
    folder.mkdir()
    half = log["session"].max() // 2
    log.filter(pl.col("session") <= half).write_parquet(folder / "a.parquet")
    log.filter(pl.col("session") > half).write_parquet(folder / "b.parquet")
    for source in (folder, str(folder / "*.parquet")):
        back = read_log(source, lazy=False).sort("session", "position")
        assert_frame_equal(back, log, categorical_as_str=True)


def test_read_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(LogSchemaError, match="no such file"):
        read_log(tmp_path / "nope.parquet")


def test_write_is_atomic_and_refuses_to_overwrite(log, tmp_path):
    path = tmp_path / "log.parquet"
    write_log(log, path)
    before = path.read_bytes()
    with pytest.raises(InputError, match="exists"):
        write_log(log, path)
    bad = _set(log, 5, 3, "position", pl.lit(2, dtype=pl.UInt16))
    with pytest.raises(LogSchemaError):
        write_log(bad, path, overwrite=True)
    assert path.read_bytes() == before  # untouched on error
    with pytest.raises(LogSchemaError):
        write_log(bad, tmp_path / "new.parquet")
    # no temp files left (the ledger of clickrank's files aside)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != LEDGER) == ["log.parquet"]


def test_write_lazy_frame(log, tmp_path):
    path = write_log(log.lazy(), tmp_path / "lazy.parquet")
    assert_frame_equal(pl.read_parquet(path), log, categorical_as_str=True)


def test_ctr_by_position_matches_numpy(log):
    table = ctr_by_position(log).collect()
    pos = log["position"].to_numpy()
    clk = log["click"].to_numpy()
    K = pos.max()
    shown = np.bincount(pos, minlength=K + 1)[1:]
    clicks = np.bincount(pos, weights=clk, minlength=K + 1)[1:]
    assert table["position"].to_list() == list(range(1, K + 1))
    np.testing.assert_array_equal(table["impressions"].to_numpy(), shown)
    np.testing.assert_array_equal(table["clicks"].to_numpy(), clicks)
    ctr = clicks / shown
    np.testing.assert_allclose(table["se"].to_numpy(), np.sqrt(ctr * (1 - ctr) / shown))


def test_grouped_counts_add_up(log):
    n, c = log.height, int(log["click"].sum())
    for agg in (
        counts_by_query_doc_position,
        counts_by_intervention_position,
        counts_by_ranker_query_doc_position,
    ):
        t = agg(log.lazy()).collect(engine="streaming")
        assert int(t["impressions"].sum()) == n
        assert int(t["clicks"].sum()) == c
    t = counts_by_intervention_position(log).collect()
    assert set(t["intervention"].cast(pl.String)) == {"none", "swap"}
    swapped = t.filter(pl.col("intervention") == "swap")
    assert (swapped["swap_pivot"] == 1).all() and (swapped["swap_k"] >= 2).all()
    qdp = counts_by_query_doc_position(log).collect()
    assert qdp.select(pl.struct("query", "doc", "position").is_unique().all()).item()


def test_aggregation_needs_its_columns(log):
    with pytest.raises(LogSchemaError, match="ranker"):
        counts_by_ranker_query_doc_position(log.drop("ranker"))


# -- streaming checks ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_log_in_session_order_is_checked_in_batches_without_grouping_sessions(log, monkeypatch):
    from clickrank import clicklog

    monkeypatch.setattr(clicklog, "VALIDATION_BATCH_ROWS", 7)  # session boundaries straddle
    lf = log.lazy()
    assert clicklog._scan_values(lf, lf.collect_schema())[1]  # in order: no group-by needed
    shuffled = log.sample(fraction=1.0, shuffle=True, seed=3)
    assert not clicklog._scan_values(shuffled.lazy(), lf.collect_schema())[1]
    validate_log(shuffled)  # another order: still valid, through the group-by
    seen: list[int] = []
    validate_log(log, progress=seen.append)
    assert sum(seen) == log.height and len(seen) > 1


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize(
    "session, position, column, value, message",
    [
        (7, 3, "position", 2, "duplicated position: session 7, position 2 appears 2 times"),
        (9, 8, "position", 9, "positions of session 9 are not contiguous"),
        (11, 5, "query", -1, "session 11 mixes 2 queries"),
    ],
)
def test_a_broken_session_is_found_in_order_and_out_of_order(
    log, monkeypatch, shuffle, session, position, column, value, message
):
    from clickrank import clicklog

    monkeypatch.setattr(clicklog, "VALIDATION_BATCH_ROWS", 5)
    bad = _set(log, session, position, column, pl.lit(value).cast(log.schema[column]))
    if shuffle:
        bad = bad.sample(fraction=1.0, shuffle=True, seed=1)
    with pytest.raises(LogSchemaError, match=message):
        validate_log(bad)


# -- metadata ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["log.parquet", "logdir"])
def test_a_simulated_log_describes_itself_and_its_logger(tmp_path, name):
    data = synthetic(60, 12, seed=1)
    ranker = production_ranker(data, 0.05, seed=2)
    out = tmp_path / name
    simulate(
        data,
        policy=ranker,
        click_model=make_click_model("pbm"),
        n_sessions=500,
        interventions=Swap(0.2),
        top_k=8,
        seed=7,
        out=out,
        metadata={"study": "x"},
    )
    meta = read_log_metadata(out)
    assert meta["format"] == "clickrank.log" and meta["study"] == "x"
    assert (meta["sessions"], meta["top_k"], meta["seed"], meta["n_queries"]) == (500, 8, 7, 60)
    assert meta["policy"] == ["production"] and meta["click_model"].startswith("PBM(")
    assert meta["interventions"] == [repr(Swap(0.2))]
    q = meta["logger_quality"]["production"]
    assert q == ranker.quality(data)  # JSON keeps floats exactly
    assert q["trained_on"] == 20 and q["held_out"]["queries"] == 40
    if out.is_dir():  # every part carries it; a glob reads the first part
        assert read_log_metadata(out / "*.parquet") == meta


def test_a_log_from_scores_has_no_logger_quality_unless_given(tmp_path):
    data = synthetic(30, 8, seed=1)
    out = tmp_path / "log.parquet"
    simulate(
        data,
        policy=data.X[:, 0],
        click_model="pbm",
        n_sessions=100,
        top_k=5,
        out=out,
        metadata={"logger_quality": {"production": {"note": "from the caller"}}},
    )
    meta = read_log_metadata(out)
    assert meta["logger_quality"] == {"production": {"note": "from the caller"}}
    out2 = tmp_path / "plain.parquet"
    simulate(data, policy=data.X[:, 0], click_model="pbm", n_sessions=100, top_k=5, out=out2)
    assert "logger_quality" not in read_log_metadata(out2)


def test_metadata_needs_a_log_on_disk_and_json(tmp_path):
    data = synthetic(10, 8, seed=1)
    with pytest.raises(InputError, match="give out=..."):
        simulate(
            data, policy=data.X[:, 0], click_model="pbm", n_sessions=10, top_k=5, metadata={"a": 1}
        )
    with pytest.raises(InputError, match="metadata must be JSON"):
        simulate(
            data,
            policy=data.X[:, 0],
            click_model="pbm",
            n_sessions=10,
            top_k=5,
            out=tmp_path / "l.parquet",
            metadata={"a": float("nan")},
        )
    assert not (tmp_path / "l.parquet").exists()


def test_logs_from_elsewhere_have_no_metadata_and_bad_metadata_is_one_line(log, tmp_path):
    log.write_parquet(tmp_path / "other.parquet")
    assert read_log_metadata(tmp_path / "other.parquet") is None
    write_log(log, tmp_path / "log.csv")
    assert read_log_metadata(tmp_path / "log.csv") is None
    log.write_parquet(tmp_path / "bad.parquet", metadata={METADATA_KEY: "{not json"})
    with pytest.raises(LogSchemaError, match=r"bad.parquet.*not valid JSON"):
        read_log_metadata(tmp_path / "bad.parquet")
    log.write_parquet(tmp_path / "list.parquet", metadata={METADATA_KEY: "[1, 2]"})
    with pytest.raises(LogSchemaError, match="not a JSON object"):
        read_log_metadata(tmp_path / "list.parquet")
    (tmp_path / "zero.parquet").write_bytes(b"")
    with pytest.raises(LogSchemaError, match="zero.parquet.*cannot read the parquet metadata"):
        read_log_metadata(tmp_path / "zero.parquet")
    with pytest.raises(LogSchemaError, match="no such file"):
        read_log_metadata(tmp_path / "missing.parquet")


@pytest.mark.parametrize("lazy", [False, True])
def test_write_log_keeps_metadata(log, tmp_path, lazy):
    out = tmp_path / "log.parquet"
    write_log(log.lazy() if lazy else log, out, metadata={"source": "test", "n": 3})
    assert read_log_metadata(out) == {"source": "test", "n": 3}
    with pytest.raises(InputError, match="not CSV"):
        write_log(log, tmp_path / "log.csv", metadata={"a": 1})
    assert not (tmp_path / "log.csv").exists()


# -- per-position statistics (what the figures and run summaries draw) ---------------------


def _tiny_log() -> pl.DataFrame:
    # session 0: click at 3 under skips at 1 (label 2) and 2 (label 0);
    # session 1: clicks at 2 and 3 under a skip at 1 (label 1); session 2: a tie
    return pl.DataFrame(
        {
            "session": [0, 0, 0, 1, 1, 1, 2, 2],
            "query": [1, 1, 1, 1, 1, 1, 2, 2],
            "position": [1, 2, 3, 1, 2, 3, 1, 2],
            "doc": [10, 11, 12, 12, 10, 11, 20, 21],
            "click": [False, False, True, False, True, True, False, True],
            "label": [2.0, 0.0, 1.0, 1.0, 2.0, 0.0, 1.0, 1.0],
        }
    )


def test_skip_above_pairs_counts_against_the_labels():
    pairs = skip_above_pairs(_tiny_log())
    assert pairs.select("p_click", "p_skip").rows() == [(2, 1), (3, 1), (3, 2)]
    # (2 over 1): session 1 labels 2 vs 1 agrees, session 2 labels 1 vs 1 ties;
    # (3 over 1): session 0 labels 1 vs 2 and session 1 labels 0 vs 1, both inverted;
    # (3 over 2): session 0 labels 1 vs 0 agrees (session 1 clicked position 2: no pair)
    assert pairs["pairs"].to_list() == [2, 2, 1]
    assert pairs["agree"].to_list() == [1, 0, 1]
    assert pairs["tie"].to_list() == [1, 0, 0]
    assert pairs["invert"].to_list() == [0, 2, 0]
    by_d = skip_above_by_distance(pairs)
    assert by_d["d"].to_list() == [1, 2]  # (2 over 1) + (3 over 2) at distance 1
    assert by_d["pairs"].to_list() == [3, 2]
    assert by_d["agree"].to_list() == [2, 0]
    assert by_d["invert"].to_list() == [0, 2]


def test_per_position_means_and_shares_follow_the_labels():
    tiny = _tiny_log()
    means = mean_by_position(tiny, lambda y: 2 * y)
    assert means["position"].to_list() == [1, 2, 3]
    assert means["shown"].to_list() == [3, 3, 2]
    assert means["mean"].to_list() == pytest.approx([4 / 3, 3 / 3, 1 / 2])
    assert means["mean_value"].to_list() == pytest.approx([2 * 4 / 3, 2 * 3 / 3, 2 * 1 / 2])
    share = share_at_least_by_position(tiny, 1.0)
    assert share["share"].to_list() == pytest.approx([1.0, 2 / 3, 1 / 2])
    cells = ctr_by_position_and_label(tiny).collect()
    row = cells.filter((pl.col("position") == 2) & (pl.col("label") == 1.0)).row(0, named=True)
    assert (row["impressions"], row["clicks"]) == (1, 1)
    assert cells["impressions"].sum() == tiny.height


def test_log_checks_name_the_caller_and_the_missing_column(log):
    with pytest.raises(InputError, match="my_figure needs log column"):
        lazy_log(log.drop("label"), ("position", "label"), "my_figure")
    with pytest.raises(InputError, match="polars"):
        lazy_log({"position": [1]}, ("position",), "my_figure")
    with pytest.raises(InputError, match="no 'intervention' column"):
        select_intervention(log.drop("intervention").lazy(), "swap", "my_figure")
    swap = select_intervention(log.lazy(), "swap", "my_figure").collect()
    assert swap.height and (swap["intervention"].cast(pl.String) == "swap").all()


# -- LogStats: the statistics of a log as a result -------------------------------------------


def test_log_stats_counts_the_log_and_views_the_sessions_without_intervention(log):
    cm = make_click_model("pbm")
    theta = cm.propensities(5)  # shorter than the 8 positions: the rest have no true θ
    s = LogStats.from_log(
        log, true_theta=theta, click_model=repr(cm), relevance="labels 0..4", path="x.parquet"
    )
    assert s.sessions == 3000 and s.impressions == log.height
    assert s.clicks == int(log["click"].sum())
    assert sum(s.sessions_by_intervention.values()) == 3000
    assert list(s.sessions_by_intervention) == ["none", "swap"]
    assert s.ctr_view == "none"
    none = log.filter(pl.col("intervention").cast(pl.String) == "none")
    ctr = ctr_by_position(none).collect()
    assert [r.position for r in s.ctr_by_position] == ctr["position"].to_list()
    assert [r.ctr for r in s.ctr_by_position] == ctr["ctr"].to_list()
    assert [r.true_theta for r in s.ctr_by_position] == [*theta.tolist(), None, None, None]
    assert all(r.mean_click_given_examined is None for r in s.ctr_by_position)
    pairs = skip_above_pairs(log)
    assert s.skip_above.preferences == pairs["pairs"].sum()
    assert s.skip_above.agree + s.skip_above.tie + s.skip_above.invert == pairs["pairs"].sum()
    d = s.to_dict()
    assert list(d) == [
        "sessions",
        "impressions",
        "clicks",
        "sessions_by_intervention",
        "ctr_view",
        "ctr_by_position",
        "skip_above",
        "click_model",
        "relevance",
        "path",
    ]
    assert list(d["ctr_by_position"][0]) == [
        "position",
        "impressions",
        "clicks",
        "ctr",
        "se",
        "mean_label",
        "mean_click_given_examined",
        "true_theta",
    ]
    assert d["skip_above"] == {
        "preferences": s.skip_above.preferences,
        "agree": s.skip_above.agree,
        "tie": s.skip_above.tie,
        "invert": s.skip_above.invert,
    }
    assert (d["click_model"], d["relevance"], d["path"]) == (repr(cm), "labels 0..4", "x.parquet")
    assert "CTR by position (sessions without intervention (none))" in s.summary()
    assert str(s) == s.summary()


def test_log_stats_round_trips_through_its_dict_and_a_file(log, tmp_path):
    s = LogStats.from_log(log, values=lambda y: y / 4, true_theta=[1.0, 0.5], click_model="PBM()")
    assert LogStats.from_dict(s.to_dict()) == s
    assert s.to_dict() == LogStats.from_dict(s.to_dict()).to_dict()
    path = s.save(tmp_path / "stats.json")
    assert LogStats.load(path) == s
    assert LogStats.load(path).ctr_by_position == s.ctr_by_position
    other = LogStats.from_dict({**s.to_dict(), "clicks": s.clicks + 1})
    assert other != s


def test_log_stats_without_a_plain_view_use_all_sessions_and_name_missing_columns():
    tiny = _tiny_log().with_columns(intervention=pl.lit("swap"))
    s = LogStats.from_log(tiny, values=lambda y: 2 * y)
    assert s.ctr_view == "all" and s.sessions_by_intervention == {"swap": 3}
    assert [r.mean_label for r in s.ctr_by_position] == pytest.approx([4 / 3, 1, 1 / 2])
    assert [r.mean_click_given_examined for r in s.ctr_by_position] == pytest.approx([8 / 3, 2, 1])
    assert (s.skip_above.preferences, s.skip_above.agree) == (5, 2)
    assert (s.skip_above.tie, s.skip_above.invert) == (1, 2)
    assert "all sessions" in s.summary() and "P(click|exam)" in s.summary()
    with pytest.raises(InputError, match="LogStats.from_log needs log column"):
        LogStats.from_log(_tiny_log())


def test_log_stats_conf_int_is_the_normal_interval_of_the_ctr(log):
    s = LogStats.from_log(log)
    ci = s.conf_int(0.1)
    assert ci.columns == ["position", "estimate", "lower", "upper", "alpha"]
    assert ci["position"].to_list() == [r.position for r in s.ctr_by_position]
    se = np.array([r.se for r in s.ctr_by_position])
    est = ci["estimate"].to_numpy()
    assert est == pytest.approx([r.ctr for r in s.ctr_by_position])
    assert ci["upper"].to_numpy() - est == pytest.approx(1.6448536 * se)
    assert est - ci["lower"].to_numpy() == pytest.approx(1.6448536 * se)
    assert (ci["alpha"] == 0.1).all()
    assert s.conf_int()["upper"].to_numpy() - est == pytest.approx(1.959964 * se)
    with pytest.raises(InputError, match="alpha"):
        s.conf_int(0.0)
