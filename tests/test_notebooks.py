"""The tutorial notebooks: committed without outputs, and they run from top to bottom.

Each notebook is executed with nbclient in a ``python3`` kernel, at the small sizes selected by
``CLICKRANK_NOTEBOOK_SMALL=1``; any cell error fails the test. A probe cell appended to the
executed copy checks that the kernel is this test's interpreter (same ``sys.prefix``), so the
notebooks are tested against the clickrank installed here and not against some other Python
that happens to own a ``python3`` kernelspec.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="notebook tests need `pip install -e .[test]`")
nbclient = pytest.importorskip("nbclient", reason="notebook tests need `pip install -e .[test]`")
pytest.importorskip("ipykernel", reason="notebook tests need `pip install -e .[test]`")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
EXPECTED = ("quickstart.ipynb", "bring_your_own_log.ipynb")
PROBE = "import sys\nprint('KERNEL_PREFIX=' + sys.prefix)"


def _shared_data() -> Path:
    env = os.environ.get("CLICKRANK_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def _read(name: str):
    return nbformat.read(NOTEBOOKS / name, as_version=4)


def _execute(name: str, monkeypatch: pytest.MonkeyPatch, **env: str):
    """Run notebook ``name`` (plus the probe cell) in a fresh kernel; return it with outputs."""
    monkeypatch.setenv("CLICKRANK_NOTEBOOK_SMALL", "1")
    # Look for kernelspecs in this environment before the user's folders (a user-level
    # "python3" kernelspec may point to another interpreter); the probe checks the result.
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    nb = _read(name)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE))
    client = nbclient.NotebookClient(
        nb,
        kernel_name="python3",
        timeout=300,
        resources={"metadata": {"path": str(NOTEBOOKS)}},  # the kernel's working folder
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, on any error
    return nb


def _text(nb) -> str:
    """Everything the notebook printed or displayed as text."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                parts.append(out["text"])
            elif "data" in out:
                parts.append(out["data"].get("text/plain", ""))
    return "\n".join(parts)


def _n_images(nb) -> int:
    return sum(
        "image/png" in out.get("data", {}) for cell in nb.cells for out in cell.get("outputs", [])
    )


def _check_kernel(nb) -> None:
    line = next(ln for ln in _text(nb).splitlines() if ln.startswith("KERNEL_PREFIX="))
    assert Path(line.split("=", 1)[1]).resolve() == Path(sys.prefix).resolve(), (
        f"the notebook ran in {line}, not in this interpreter's environment {sys.prefix}"
    )


def test_the_tutorial_notebooks_are_all_there():
    present = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert set(EXPECTED) <= set(present), present


@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_is_committed_without_outputs(name):
    nb = _read(name)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code, f"{name} has no code cells"
    with_outputs = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.outputs]
    counted = [
        i for i, c in enumerate(nb.cells) if c.cell_type == "code" and c.execution_count is not None
    ]
    assert not with_outputs, f"{name}: cells {with_outputs} have outputs; clear them"
    assert not counted, f"{name}: cells {counted} have an execution_count; clear it"
    first = code[0].source
    assert "CLICKRANK_NOTEBOOK_SMALL" in first, "the first code cell must read the size switch"


@pytest.mark.parametrize("name", EXPECTED)
def test_the_site_shows_the_notebook_executed_and_up_to_date(name):
    """docs/notebooks/NAME.md is the notebook with its outputs: same code, figures present."""
    import importlib.util

    script = NOTEBOOKS.parent / "docs" / "_ext" / "render_notebooks.py"
    spec = importlib.util.spec_from_file_location("render_notebooks", script)
    render = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(render)
    page = NOTEBOOKS.parent / "docs" / "notebooks" / f"{name.removesuffix('.ipynb')}.md"
    assert page.is_file(), f"{page} is missing: run python {script.relative_to(NOTEBOOKS.parent)}"
    text = page.read_text(encoding="utf-8")
    assert render.page_code(text) == render.code_cells(_read(name)), (
        f"{page.name} no longer matches {name}: render it again with "
        f"python docs/_ext/render_notebooks.py {name.removesuffix('.ipynb')}"
    )
    figures = [ln for ln in text.splitlines() if ln.startswith("![figure ")]
    assert len(figures) >= 2 and "```text" in text  # numbers and figures for the web reader
    for ln in figures:
        assert (page.parent / ln[ln.index("(") + 1 : -1]).is_file()
    assert "/work/" not in text  # no machine paths


@pytest.mark.slow
def test_quickstart_runs(monkeypatch):
    nb = _execute("quickstart.ipynb", monkeypatch)
    _check_kernel(nb)
    text = _text(nb)
    assert "SMALL=True" in text
    for expected in (
        "Propensities (swap",
        "Evaluation on",
        "Paired comparison on ndcg@10",
        "Interleaving experiment (team-draft",
    ):
        assert expected in text
    assert _n_images(nb) >= 2  # the propensity and CTR figures render inline


@pytest.mark.slow
def test_bring_your_own_log_runs(monkeypatch):
    nb = _execute("bring_your_own_log.ipynb", monkeypatch)
    _check_kernel(nb)
    text = _text(nb)
    assert "SMALL=True" in text
    assert "LogSchemaError: column 'position'" in text  # the broken log is refused
    data = _shared_data()
    if (data / "yandex_relpred2011_pyclick_sample" / "trainSample").is_file():
        assert "Yandex relevance-prediction sample (real clicks)" in text
    if (data / "letor4_mq2008" / "Fold1" / "train.txt").is_file():
        assert "MQ2008 Fold1" in text
    assert "Propensities (harvest-allpairs" in text and "Propensities (em" in text
    assert "Paired comparison on ndcg@10: ips vs naive" in text
    assert _n_images(nb) >= 2


@pytest.mark.slow
def test_bring_your_own_log_falls_back_to_simulated_data(monkeypatch, tmp_path):
    empty = tmp_path / "no_shared_data"
    empty.mkdir()
    nb = _execute("bring_your_own_log.ipynb", monkeypatch, CLICKRANK_SHARED_DATA=str(empty))
    text = _text(nb)
    assert "SIMULATED stand-in (the Yandex sample was not found)" in text
    assert "SYNTHETIC stand-in (MQ2008 was not found)" in text
    assert "Paired comparison on ndcg@10: ips vs naive" in text
