"""The figures of benchmarks/code_health.py count what its docstring says."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import code_health  # noqa: E402


def _module(tmp_path: Path, source: str, name: str = "x.py") -> Path:
    path = tmp_path / name
    path.write_text(source)
    return path


def test_private_imports_across_packages_are_counted(tmp_path):
    source = (
        "from clickrank.engine._join import per_doc\n"  # another package's private module
        "from clickrank.specs import _names\n"  # another package's private module, by name
        "from clickrank.lambdas import _truncation, lambda_objective\n"  # a private name
        "import clickrank.engine._spark as s\n"
    )
    found = code_health.private_imports(_module(tmp_path, source), "clickrank.targets._stats")
    assert found == [
        "clickrank.targets._stats -> clickrank.engine._join",
        "clickrank.targets._stats -> clickrank.engine._spark",
        "clickrank.targets._stats -> clickrank.lambdas._truncation",
        "clickrank.targets._stats -> clickrank.specs._names",
    ]


def test_own_package_and_the_shared_core_are_allowed(tmp_path):
    source = (
        "from clickrank._core._validation import InputError\n"  # the shared core
        "from clickrank._core._io import _atomic\n"  # the shared core, private name too
        "from ._gains import ips\n"  # the package's own private module
        "from .._validation import check_choice\n"
        "from clickrank.targets._target import Target\n"
        "from clickrank.metrics import ndcg\n"  # a public name of another package
        "import numpy._core\n"  # not clickrank
    )
    path = _module(tmp_path, source, "_factory.py")
    assert code_health.private_imports(path, "clickrank.targets._factory") == []


def test_the_largest_class_counts_its_body(tmp_path):
    source = 'class A:\n    """Doc."""\n\n    x = 1\n\n\nclass B:\n    y = 2\n'
    assert code_health.largest_classes(_module(tmp_path, source), "m") == [("m.A", 3), ("m.B", 1)]


def test_train_options_are_what_help_lists():
    import re

    from click.testing import CliRunner

    from clickrank.cli import cli

    shown = CliRunner().invoke(cli, ["train", "--help"], terminal_width=200).output
    listed = [ln for ln in shown.splitlines() if re.match(r"^  (-\w, )?--[\w-]", ln)]
    listed = [ln for ln in listed if "--help" not in ln]
    assert code_health.train_options() == len(listed) > 0


def test_the_figures_hold_every_key():
    figures = code_health.measure()
    keys = ("largest_class", "private_imports", "train_options", "readme_words",
            "history_markers", "history_markers_per_file")  # fmt: skip
    for key in keys:
        assert key in figures, key
    assert figures["readme_words"] == code_health.words(ROOT / "README.md")
