"""clickrank._core._progress: the library's progress bar (no CLI package needed)."""

from __future__ import annotations

import io

from clickrank._core._progress import progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_disabled_bar_counts_but_draws_nothing(capsys):
    with progress(10, label="work", enabled=False) as bar:
        bar.update(4)
        bar.update(6)
    assert bar.done == 10
    assert capsys.readouterr().err == ""


def test_wrapping_an_iterable_yields_every_item_and_counts_them():
    bar = progress(range(5), label="items", enabled=False)
    assert list(bar) == [0, 1, 2, 3, 4]
    assert bar.done == 5 and bar.total == 5


def test_off_a_terminal_only_the_label_is_written(capsys):
    with progress(3, label="simulating", enabled=True) as bar:
        bar.update(3)
    assert capsys.readouterr().err == "simulating\n"


def test_on_a_terminal_the_bar_is_redrawn_and_ends_full():
    out = _Tty()
    bar = progress(4, label="boot", enabled=True)
    bar._file = out
    with bar:
        bar.update(2)
        bar.update(2)
    text = out.getvalue()
    assert text.startswith("\rboot  [") and text.endswith("100%\n")
    assert bar.render() == "boot  [" + "#" * 36 + "]   100%"


def test_simulate_draws_its_bar_without_the_cli_package(capsys):
    import clickrank as cr

    data = cr.synthetic(3, 4, seed=0)
    log = cr.simulate(
        data,
        policy=cr.policies.UniformRandom(),
        click_model=cr.make_click_model("pbm"),
        n_sessions=5,
        top_k=2,
        seed=0,
        progress=True,
    )
    assert log.height == 10
    assert capsys.readouterr().err == "simulating\n"
