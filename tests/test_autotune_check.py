"""`perfbot check` of autotuned kernels on the CPU: every config each `triton.autotune`d kernel may
choose is run once in Triton's interpreter and checked, nothing timed, with the autotuner's hooks
and pruning as a GPU's tuning runs them (compiling/tuning.py); a wrong config is named in its row.
The subject is a generated repository of the field's kind (tests/autotuned.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from tests.autotuned import autotuned_repository

TUNED = ["--kernel", "scale", "--kernel", "total", "--kernel", "doubled"]


def _check(root: Path, *arguments: str):
    return CliRunner().invoke(perfbot, ["check", "--project", str(root), "--device", "cpu", *arguments])


def _rows(output: str) -> list[tuple[str, str, str, str]]:
    """(case, implementation, the config's BLOCK, result) of each row of the check's table."""
    rows = []
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if len(cells) == 8 and cells[0] == "quick":
            block = re.search(r"BLOCK=(\d+)", cells[4])
            rows.append((cells[1], cells[3], block.group(1) if block else "-", cells[7]))
    return rows


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "220")  # rows of one line each


def test_every_config_of_every_autotuned_kernel_is_checked_and_named(tmp_path: Path):
    result = _check(autotuned_repository(tmp_path / "repo"))
    assert result.exit_code == 0, result.output
    rows = _rows(result.output)
    for case in ("odd", "even"):
        for implementation in ("scale", "total", "doubled"):
            blocks = [b for c, i, b, _ in rows if (c, i) == (case, implementation)]
            assert blocks == ["16", "32", "64"], (case, implementation, blocks)
        assert [b for c, i, b, _ in rows if (c, i) == (case, "torch")] == ["-"]  # no autotuned kernel: one row
    assert all(result == "right" for *_, result in rows)
    assert "20 right, 0 wrong, of 20" in result.output


def test_a_wrong_mask_in_one_config_fails_naming_that_config(tmp_path: Path):
    result = _check(autotuned_repository(tmp_path / "repo", wrong_block=32), *TUNED)
    assert result.exit_code == 1, result.output
    wrong = [(c, i, b) for c, i, b, r in _rows(result.output) if r != "right"]
    # The even case takes the heuristics' EVEN path, which has no mask to get wrong.
    assert wrong == [("odd", "scale", "32")]
    assert "17 right, 1 wrong, of 18" in result.output


@pytest.mark.parametrize(("hooks", "wrong"), [({"reset": False}, "total"), ({"restore": False}, "doubled")])
def test_the_autotuners_hooks_run_as_a_gpus_tuning_runs_them(tmp_path: Path, hooks: dict, wrong: str):
    # Tuning runs a config once before the run that counts: an accumulating kernel without
    # reset_to_zero adds twice, an in-place one without restore_value doubles twice.
    result = _check(autotuned_repository(tmp_path / "repo", **hooks), *TUNED)
    assert result.exit_code == 1, result.output
    assert {i for _, i, _, r in _rows(result.output) if r != "right"} == {wrong}


@pytest.mark.parametrize(
    ("prune", "odd", "even"),
    [
        # early_config_prune leaves the blocks no longer than the row: 16 and 32 of 45, all of 64.
        ('{"early_config_prune": lambda configs, nargs, **kw: [c for c in configs if c.kwargs["BLOCK"] <= nargs["n"]]}',
         ["16", "32"], ["16", "32", "64"]),
        # perf_model ranks the configs; top_k keeps the two it predicts fastest.
        ('{"perf_model": lambda **kw: -kw["BLOCK"], "top_k": 2}', ["64", "32"], ["64", "32"]),
    ],
)  # fmt: skip
def test_only_the_configs_pruning_leaves_are_checked(tmp_path: Path, prune: str, odd: list, even: list):
    result = _check(autotuned_repository(tmp_path / "repo", prune=prune), "--kernel", "scale")
    assert result.exit_code == 0, result.output
    rows = _rows(result.output)
    assert [b for c, _, b, _ in rows if c == "odd"] == odd
    assert [b for c, _, b, _ in rows if c == "even"] == even


def test_configs_past_the_time_allowed_are_sampled_with_the_seed_said(tmp_path: Path):
    root = autotuned_repository(tmp_path / "repo")
    result = _check(root, "--kernel", "scale", "--case", "odd", "--config-time", "0.000001", "--seed", "7")
    assert result.exit_code == 0, result.output
    assert [b for _, _, b, _ in _rows(result.output)] == ["16"]  # the first, then as many as the time allows
    assert "scale on quick/odd: 1 of 3 configs checked, drawn with seed 7" in " ".join(result.output.split())
    whole = _check(root, "--kernel", "scale", "--case", "odd")
    assert "configs checked" not in whole.output and len(_rows(whole.output)) == 3


def test_a_raising_config_shows_its_traceback_with_perfbot_debug(tmp_path: Path, monkeypatch):
    root = autotuned_repository(tmp_path / "repo")
    ops = root / "tunedlib" / "ops.py"
    ops.write_text(ops.read_text().replace("def doubled(x):\n", "def doubled(x):\n    raise KeyError('planted')\n"))
    quiet = _check(root, "--kernel", "doubled", "--case", "odd")
    assert quiet.exit_code == 1 and "Traceback" not in quiet.output
    monkeypatch.setenv("PERFBOT_DEBUG", "1")
    loud = _check(root, "--kernel", "doubled", "--case", "odd")
    assert loud.exit_code == 1 and "Traceback" in loud.stderr and "KeyError: 'planted'" in loud.stderr
