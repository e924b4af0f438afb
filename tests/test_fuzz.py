"""Property-based fuzzing (issue 19): random bytes and fields into every reader, random option
values into every command. Whatever the input: a result, or exit code 1 or 2 with one
``Error:`` line and no traceback, and no file changed outside the output.

Examples are derandomized (the same in every run) and bounded so the whole file runs in
well under a minute; size options are drawn as small values or as values so large that
the checks before the work must refuse them (never a value that would simply run long).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from _safety import one_line_error, snapshot
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import clickrank as cr
from clickrank import ClickRankError
from clickrank.cli import cli
from clickrank.lambdamart import LambdaMART
from clickrank.publiclogs import load_trec_session, load_yandex_sample
from clickrank.simulation import Swap
from clickrank.targets import read_theta

FUZZ = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    """Small inputs every command reads (LETOR data, a swap log, a model)."""
    root = tmp_path_factory.mktemp("fuzz")
    data = cr.synthetic(24, 8, seed=5)
    cr.save_letor(data, root / "data.txt")
    cr.simulate(data, policy=data.X[:, 0], click_model="pbm", n_sessions=600, top_k=5,
                interventions=[Swap(0.5)], seed=3, out=root / "log.parquet")  # fmt: skip
    LambdaMART(n_estimators=2, num_leaves=4, seed=0).fit(data).save(root / "model")
    return root


# -- readers ----------------------------------------------------------------------------------

_NUM = st.one_of(
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["", "nan", "inf", "-0", "1e400", "0x10", "1_000", "true", "é", "\x00"]),
)


def _letor_line(draw) -> str:
    feats = draw(st.lists(st.tuples(_NUM, _NUM), max_size=6))
    body = " ".join(f"{i}:{v}" for i, v in feats)
    qid = draw(st.one_of(st.just("qid:1"), _NUM.map(lambda s: f"qid:{s}"), st.just("")))
    tail = draw(st.sampled_from(["", " # docid = 7", " #", " # docid = x y"]))
    return f"{draw(_NUM)} {qid} {body}{tail}"


@st.composite
def _letor_text(draw) -> bytes:
    if draw(st.booleans()):
        return draw(st.binary(max_size=300))
    return "\n".join(_letor_line(draw) for _ in range(draw(st.integers(0, 6)))).encode(
        "utf-8", "surrogatepass"
    )


@st.composite
def _yandex_text(draw) -> bytes:
    if draw(st.booleans()):
        return draw(st.binary(max_size=300))
    recs = []
    for _ in range(draw(st.integers(0, 4))):
        docs = ",".join(draw(st.lists(_NUM, max_size=6)))
        clicks = ",".join(draw(st.lists(_NUM, max_size=3)))
        sep = draw(st.sampled_from(["\t", " ", ""]))
        colon = draw(st.sampled_from([" : ", ":", "", "::"]))
        recs.append(f"{draw(_NUM)}{sep}{docs}{colon}{clicks}")
    return (" ;".join(recs) + draw(st.sampled_from([";", "", ";;"]))).encode("utf-8", "replace")


@st.composite
def _trec_text(draw) -> bytes:
    if draw(st.booleans()):
        return draw(st.binary(max_size=300))
    lines = []
    for _ in range(draw(st.integers(0, 4))):
        n = draw(st.integers(0, 4))
        fields = [draw(_NUM), draw(_NUM)] + [
            "[" + ",".join(draw(st.lists(_NUM, min_size=n, max_size=n))) + "]"
            for _ in range(draw(st.sampled_from([3, 4, 2])))
        ]
        lines.append("\t".join(fields))
    return "\n".join(lines).encode("utf-8", "replace")


@st.composite
def _theta_text(draw) -> bytes:
    if draw(st.booleans()):
        return draw(st.binary(max_size=100))
    vals = draw(st.lists(st.one_of(_NUM, st.sampled_from(["true", "null", '"1"', "[]"])),
                         max_size=6))  # fmt: skip
    body = "[" + ",".join(vals) + "]"
    return (f'{{"theta": {body}}}' if draw(st.booleans()) else body).encode("utf-8", "replace")


def _read(reader, content: bytes, name: str) -> None:
    """The reader returns, or raises one ClickRankError line naming the file; nothing else."""
    folder = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        path = folder / name
        path.write_bytes(content)
        try:
            reader(path)
        except ClickRankError as err:
            msg = str(err)
            assert "\n" not in msg and name in msg, repr(msg)
        assert [p.name for p in folder.iterdir()] == [name]
        assert path.read_bytes() == content
    finally:
        shutil.rmtree(folder)


READERS = [
    ("letor", cr.load_letor, _letor_text(), "d.txt"),
    ("yandex", load_yandex_sample, _yandex_text(), "sample.txt"),
    ("trec", load_trec_session, _trec_text(), "trec.tsv"),
    ("theta", read_theta, _theta_text(), "theta.json"),
    ("log csv", lambda p: cr.read_log(p).collect(), st.binary(max_size=200).map(
        lambda b: b"session,query,position,doc,click\n" + b), "log.csv"),
]  # fmt: skip


@pytest.mark.parametrize(("reader", "strategy", "name"), [r[1:] for r in READERS],
                         ids=[r[0] for r in READERS])  # fmt: skip
def test_a_reader_returns_or_raises_one_line(reader, strategy, name):
    import warnings

    @settings(FUZZ, max_examples=60)
    @given(content=strategy)
    def run(content):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _read(reader, content, name)

    run()


# -- commands ----------------------------------------------------------------------------------

#: Size options: small, invalid, or far too large (refused by the checks before the work).
_SIZE = st.one_of(st.integers(-3, 3), st.sampled_from([10**12, 10**15, 2**63 - 1, 10**19])).map(str)
_REAL = st.one_of(
    st.floats(-2, 2).map(repr), st.sampled_from(["nan", "inf", "-inf", "1e308", "abc", ""])
)


def _options(draw, table: dict) -> list[str]:
    args = []
    for opt, strategy in table.items():
        if draw(st.booleans()):
            args += [opt, draw(strategy)]
    return args


COMMANDS = {
    "simulate": (
        lambda ws: ["simulate", "--synthetic", "12", "--docs-per-query", "12"],
        {"--sessions": _SIZE, "--top-k": _SIZE, "--chunk-size": _SIZE, "--eps": _REAL,
         "--swap-fraction": _REAL, "--docs-per-query": _SIZE, "--synthetic": _SIZE,
         "--seed": _SIZE, "--production-fraction": _REAL, "--temperature": _REAL},
    ),
    "propensity": (
        lambda ws: ["propensity", str(ws / "log.parquet")],
        {"--top-k": _SIZE, "--bootstrap": st.sampled_from(["-1", "0", "2", str(10**12)]),
         "--alpha": _REAL, "--seed": _SIZE,
         "--method": st.sampled_from(["swap", "randpair", "em", "nope"])},
    ),
    "evaluate": (
        lambda ws: ["evaluate", "--model", str(ws / "model"), "--data", str(ws / "data.txt")],
        {"--bootstrap": st.sampled_from(["-1", "0", "5", str(10**12)]), "--alpha": _REAL,
         "--metric": st.sampled_from(["ndcg@3", "ndcg@0", "err@-1", "map", "x@1", "p@1e3"]),
         "--seed": _SIZE},
    ),
    "interleave": (
        lambda ws: ["interleave", "--a", str(ws / "model"), "--b", str(ws / "model"), "--data",
                    str(ws / "data.txt")],
        {"--impressions": _SIZE, "--top-k": _SIZE, "--alpha": _REAL, "--seed": _SIZE,
         "--eta": _REAL},
    ),
    "fit-clicks": (
        lambda ws: ["fit-clicks", str(ws / "log.parquet"), "--models", "pbm"],
        {"--test-fraction": _REAL, "--shrinkage": _REAL, "--seed": _SIZE,
         "--models": st.sampled_from(["pbm", "", ",", "dbn,x", "PBM"])},
    ),
    "train": (
        lambda ws: ["train", "--data", str(ws / "data.txt"), "--log", str(ws / "log.parquet"),
                    "--target", "naive", "--no-select"],
        {"--trees": st.sampled_from(["-1", "0", "1", "2", str(10**9), str(10**15)]),
         "--leaves": _SIZE, "--learning-rate": _REAL, "--clip": _REAL, "--seed": _SIZE,
         "--truncation": _SIZE, "--jobs": _SIZE},
    ),
}  # fmt: skip
COMMANDS["simulate"][1]["--jobs"] = _SIZE


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_with_random_options_succeeds_or_fails_in_one_line(ws, command, tmp_path):
    fixed, table = COMMANDS[command]
    before = snapshot(ws)

    @settings(FUZZ, max_examples=15)
    @given(data=st.data())
    def run(data):
        out_dir = Path(tempfile.mkdtemp(dir=tmp_path))
        out = out_dir / ("m" if command == "train" else "out.parquet")
        args = [*fixed(ws),
                *_options(data.draw, table), "-o", str(out)]  # fmt: skip
        res = CliRunner().invoke(cli, args)
        if res.exit_code != 0:
            one_line_error(res, 1 if res.exit_code == 1 else 2)
        assert "Traceback" not in res.output
        assert snapshot(ws) == before  # nothing outside the output changed
        assert all(p == out or out in p.parents for p in out_dir.rglob("*")
                   if not p.name.startswith(".")), list(out_dir.rglob("*"))  # fmt: skip
        shutil.rmtree(out_dir)

    run()


# -- a folder of parquet parts with random schemas (issue 35) -----------------------------------

_PART_COLUMNS = ["session", "query", "position", "doc", "click", "intervention", "label"]


@st.composite
def _part_schemas(draw) -> list[tuple[list[str], dict[str, str]]]:
    """Two to four parts, each a random subset of the log's columns, some with other dtypes."""
    parts = []
    for _ in range(draw(st.integers(2, 4))):
        cols = draw(st.lists(st.sampled_from(_PART_COLUMNS), min_size=1, unique=True))
        casts = {c: draw(st.sampled_from(["same", "Int64", "String", "Float32"])) for c in cols}
        parts.append((cols, casts))
    return parts


def test_a_folder_of_parts_with_random_schemas_is_read_or_one_line(ws, tmp_path):
    """Every reader of a parts folder: the log, or one error naming the part (never polars')."""
    import polars as pl

    log = pl.read_parquet(ws / "log.parquet")
    types = {"Int64": pl.Int64, "String": pl.String, "Float32": pl.Float32}

    @settings(FUZZ, max_examples=25)
    @given(parts=_part_schemas())
    def run(parts):
        folder = Path(tempfile.mkdtemp(dir=tmp_path))
        n = len(parts)
        for i, (cols, casts) in enumerate(parts):
            chunk = log.filter(pl.col("session") % n == i).select(cols)
            chunk = chunk.with_columns(
                pl.col(c).cast(pl.String).cast(types[t], strict=False)
                for c, t in casts.items()
                if t != "same"
            )
            chunk.write_parquet(folder / f"part-{i}.parquet")
        before = snapshot(folder)
        same = all(p == parts[0] for p in parts)
        try:
            cr.read_log(folder).collect()
        except ClickRankError as err:
            msg = str(err)
            assert "\n" not in msg and str(folder) in msg, msg
            if not same:
                assert "this part" in msg or "column" in msg, msg
        res = CliRunner().invoke(cli, ["propensity", str(folder), "-o", str(folder / "t.json")])
        if res.exit_code != 0:
            one_line_error(res)
        assert snapshot(folder).items() >= before.items()
        shutil.rmtree(folder)

    run()
