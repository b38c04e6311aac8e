"""The autotuner is part of the side (perfbot/measuring/alignment.py): an A/B of autotuned kernels
on the fake GPU (tests/fake_gpu.py), where Triton's autotuner tunes for real in the interpreter,
each candidate timed by the test, and each captured call is timed by the configs it ran.

- The same code on both sides, configs apart by more than the threshold, picks at random: the
  head runs the base's pick, so the A/A stays clean; the comment says where the picks differed.
- A head that only adds a faster config: a tuning effect, named with both configs; the code's
  effect, at a common config, unchanged.
- A head whose code is 1% slower at the one config both pick: caught, as any slowdown.
- A head whose own pick is slower than the base's: the tuning's effect fails, confirmed in a
  second round at the first round's configs."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.measuring import alignment
from tests.autotuned import autotuned_repository
from tests.test_runner_cpu import ONE_CASE, _git

# What each config's captured call takes, relative: apart by more than the threshold (0.5%).
SPEED = {16: 1.0, 32: 1.015, 64: 0.985, 128: 0.95}


def _blocks(picks) -> set[int]:
    return {p.config["BLOCK"] for p in picks if "BLOCK" in p.config}


def _repository(tmp_path: Path, edit=None) -> Path:
    """The generated library as a base commit and a head commit (`edit` of tunedlib/ops.py, or a
    file beside it)."""
    root = autotuned_repository(tmp_path / "repo")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    ops = root / "tunedlib" / "ops.py"
    if edit is None:
        (root / "NOTES").write_text("head\n")
    else:
        ops.write_text(edit(ops.read_text()))
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "head")
    return root


def _ab(root: Path, out: Path, *extra: str):
    arguments = ["ab", "HEAD~1", "--project", str(root), "--suite", "quick", "--kernel", "scale", *extra]
    result = CliRunner().invoke(perfbot, [*arguments, "--samples", "12", "--out-dir", str(out)])
    comparison = json.loads((out / "comparison.json").read_text()) if (out / "comparison.json").exists() else {}
    return result, comparison, (out / "comment.md").read_text() if (out / "comment.md").exists() else ""


@pytest.fixture
def tuned(gpu):
    """Configs timed alike when tuning (so each side picks at random between them) but running
    apart by more than the threshold."""
    gpu.tune_noise = 0.02
    gpu.picked = lambda name, picks: max([SPEED[b] for b in _blocks(picks)] or [1.0])
    return gpu


def test_an_aa_whose_sides_pick_apart_runs_both_at_the_bases_pick(tuned, tmp_path: Path):
    result, comparison, comment = _ab(_repository(tmp_path), tmp_path / "aa")
    assert result.exit_code == 0, result.output
    assert all(row["verdict"] == "unchanged" for row in comparison["comparisons"]), comparison
    differing = [row for row in comparison["comparisons"] if row["picks_difference"]]
    assert differing, "the test wants sides that tuned apart"
    assert all(line.startswith("_scale_kernel (key ") for row in differing for line in row["picks_difference"])
    assert all("the head's own tuning picked" in line for row in differing for line in row["picks_difference"])
    assert "both ran the base's pick" in differing[0]["picks_difference"][0]
    assert "**The autotuner's picks differ between the sides**" in comment
    assert all(row["tuning"] is None for row in comparison["comparisons"])  # one code: no tuning effect


def test_control_without_alignment_the_same_aa_flags_what_the_dice_picked(tuned, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(alignment, "align", lambda ready, against=None: [])
    _, comparison, _ = _ab(_repository(tmp_path), tmp_path / "aa")
    assert any(row["verdict"] in ("regression", "improvement") for row in comparison["comparisons"]), comparison


def test_a_head_that_only_adds_a_faster_config_is_a_tuning_effect(gpu, tmp_path: Path):
    gpu.tune = lambda tuner, config: SPEED[config["BLOCK"]]  # each side picks its fastest
    gpu.picked = lambda name, picks: max([SPEED[b] for b in _blocks(picks)] or [1.0])
    root = _repository(tmp_path, lambda text: text.replace("(64, 4))]", "(64, 4), (128, 8))]", 1))
    result, comparison, comment = _ab(root, tmp_path / "ab")
    assert result.exit_code == 0, result.output
    for row in comparison["comparisons"]:
        assert row["verdict"] == "unchanged", row  # the code's effect, both at the base's pick
        tuning = row["tuning"]
        assert tuning["verdict"] == "improvement" and -6 < tuning["change_percent"] < -3, tuning
        assert "BLOCK=64" in tuning["base"] and "BLOCK=128" in tuning["head"]
    said = [line for line in comment.splitlines() if line.startswith("  - the tuning's effect, each side at its own")]
    assert len(said) == 2 and all(line.endswith("num\\_ctas=1)") and "BLOCK=128" in line for line in said), said


def test_a_head_whose_code_is_slower_at_the_config_both_pick_is_caught(gpu, tmp_path: Path):
    gpu.tune = lambda tuner, config: SPEED[config["BLOCK"]]  # both pick BLOCK 64
    gpu.picked = lambda name, picks: 1.01 if name.startswith("head:") and 64 in _blocks(picks) else 1.0
    root = _repository(tmp_path, lambda text: text.replace("    if EVEN:", "    # a change\n    if EVEN:", 1))
    result, comparison, _ = _ab(root, tmp_path / "ab", *ONE_CASE)
    assert result.exit_code == 1, result.output
    assert {row["verdict"] for row in comparison["comparisons"]} == {"regression"}
    assert all(row["tuning"] is None and row["picks_difference"] == [] for row in comparison["comparisons"])


@pytest.mark.slow
def test_a_head_whose_own_pick_is_slower_fails_on_the_tuning_confirmed_at_the_same_configs(gpu, tmp_path: Path):
    # The head's changed source makes its tuning prefer BLOCK 32, which runs slower than the base's 16.
    def tune(tuner, config):
        prefers = 32 if "# a change" in inspect.getsource(tuner.base_fn) else 16
        return 0.5 if config["BLOCK"] == prefers else 1.0

    gpu.tune = tune
    gpu.picked = lambda name, picks: max([SPEED[b] for b in _blocks(picks)] or [1.0])
    root = _repository(tmp_path, lambda text: text.replace("    if EVEN:", "    # a change\n    if EVEN:", 1))
    result, comparison, comment = _ab(root, tmp_path / "ab", *ONE_CASE)
    assert result.exit_code == 1, result.output
    assert comparison["comparisons"]
    for row in comparison["comparisons"]:
        assert row["fails"] and row["tuning"]["fails"], row
        assert row["reason"].startswith("the tuning's effect fails; the code's effect, both sides at a common config")
        assert "confirmed by a second interleaved round (at the first round's autotune configs" in row["reason"]
        assert "BLOCK=16" in row["tuning"]["base"] and "BLOCK=32" in row["tuning"]["head"]
    assert "the base ran BLOCK=16" not in comment  # the code's effect ran both at the base's pick


def test_run_and_show_print_each_rows_pick_and_the_results_record_how_it_was_made(gpu, tmp_path: Path):
    gpu.tune = lambda tuner, config: SPEED[config["BLOCK"]]  # BLOCK 64 is the fastest candidate
    root = autotuned_repository(tmp_path / "repo")
    out = tmp_path / "run.json"
    arguments = ["run", "--project", str(root), "--suite", "quick", "--kernel", "scale", "--kernel", "torch"]
    result = CliRunner().invoke(perfbot, [*arguments, "--samples", "10", "--out", str(out)])
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    scale = [b for b in saved["benchmarks"] if b["kernel"] == "scale"]
    assert [b["case"] for b in scale] == ["odd", "even"]
    for bench in scale:
        [pick] = bench["autotune"]
        assert pick["kernel"] == "_scale_kernel" and pick["origin"] == "tuned" and pick["config"]["BLOCK"] == 64
        assert sorted(c["config"]["BLOCK"] for c in pick["candidates"]) == [16, 32, 64]
        assert pick["key"][0] == str(bench["shape"]["n"])
    assert [b["autotune"] for b in saved["benchmarks"] if b["kernel"] == "torch"] == [[], []]
    shown = CliRunner().invoke(perfbot, ["show", str(out), "--markdown"])
    assert shown.exit_code == 0, shown.output
    lines = [line.replace("\\_", "_") for line in shown.output.splitlines() if line.startswith("| quick")]
    assert "autotune config" in shown.output
    assert all("_scale_kernel: BLOCK=64, num_warps=4" in line for line in lines if "| scale |" in line)
    assert not any("BLOCK" in line for line in lines if "| torch |" in line)


def test_selftest_on_an_autotuned_kernel_says_how_often_fresh_imports_picked_otherwise(tuned, tmp_path, monkeypatch):
    from perfbot.measuring import selftest
    from tests.test_selftest import _rounds

    def measure_checks(fn, levels, checks, first, most, policy, on_check, on_calibrated):
        return _rounds(checks, 0.001, levels, rounds=first)  # the timing half needs the GPU

    monkeypatch.setattr(selftest, "measure_checks", measure_checks)
    root = autotuned_repository(tmp_path / "repo")
    out = tmp_path / "selftest.json"
    arguments = ["selftest", "--project", str(root), "--suite", "quick", "--case", "odd", "--kernel", "scale"]
    result = CliRunner().invoke(perfbot, [*arguments, "--checks", "8", "--levels", "1", "--interference-rounds", "0",
                                          "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    picks = json.loads(out.read_text())["autotune"]
    assert picks["imports"] == 8 and sum(picks["picks"].values()) == 8
    assert 0 < picks["differed"] < 8 and len(picks["picks"]) > 1  # the noise made them pick apart
    said = " ".join(result.output.split())
    assert f"autotune: {picks['differed']} of 8 fresh imports picked otherwise than the first" in said
    untuned = CliRunner().invoke(perfbot, [*arguments[:-1], "torch", "--checks", "4", "--levels", "1",
                                           "--interference-rounds", "0"])  # fmt: skip
    assert untuned.exit_code == 0 and "autotune:" not in untuned.output


def test_a_confirming_round_pins_each_case_to_the_picks_that_case_ran():
    """One implementation autotunes per case (its key holds the shape): a second round pins the
    benchmark of each case, and of each mode, to what that one ran in the first, never to the
    picks of the case measured last."""
    import dataclasses

    from perfbot.loading.subject import Case
    from perfbot.measuring.planning import Planned
    from perfbot.records.autotune import AutotunePick
    from tests.helpers import make_results

    def pick(case: str) -> AutotunePick:
        return AutotunePick("_scale_kernel", None, "0" * 64, [case], {"BLOCK": len(case)}, "tuned")

    first = make_results()
    ran = [dataclasses.replace(b, autotune=[pick(f"{b.case} {b.mode}")]) for b in first.benchmarks]
    backward = [
        dataclasses.replace(b, mode="backward", autotune=[pick(f"{b.case} backward")]) for b in first.benchmarks
    ]
    first = dataclasses.replace(first, benchmarks=ran + backward)
    fixed = alignment.fixed_from({"base": first, "head": first})
    cases = {(b.suite, b.case, b.dtype) for b in first.benchmarks}
    assert len(cases) > 1
    for suite, name, dtype in cases:
        for mode in ("forward", "backward"):
            case = Case(suite, name, {"M": 1}, dtype, mode)
            for side in ("base", "head"):
                planned = Planned(case, first.benchmarks[0].kernel, (), side)
                assert alignment.fixed_for(fixed, planned) == [pick(f"{name} {mode}")]
