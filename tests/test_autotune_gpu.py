"""Autotuned kernels on the GPU: Triton's autotuner times its candidates for real, perfbot records
each pick with every candidate's time, and an A/A of them runs both sides at one config
(compiling/tuning.py, measuring/alignment.py). The subject is tests/autotuned.py's library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from tests.autotuned import autotuned_repository
from tests.test_runner_cpu import _git

pytestmark = pytest.mark.gpu
SUITES = """\
gpu:
  dtype: float32
  implementations: [scale, total, doubled, torch]
  cases:
    - {name: odd, n: 1000003}
    - {name: even, n: 1048576}
"""


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = autotuned_repository(tmp_path / "repo")
    (root / "perf" / "suites.yaml").write_text(SUITES)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    (root / "NOTES").write_text("head\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "head")
    return root


def test_a_run_records_each_pick_with_every_candidates_time(library: Path, tmp_path: Path):
    out = tmp_path / "run.json"
    result = CliRunner().invoke(perfbot, ["run", "--project", str(library), "--suite", "gpu", "--out", str(out)])
    assert result.exit_code == 0, result.output
    benchmarks = json.loads(out.read_text())["benchmarks"]
    tuned = [b for b in benchmarks if b["kernel"] != "torch"]
    assert len(tuned) == 6
    for bench in tuned:
        [pick] = bench["autotune"]
        assert pick["origin"] in ("tuned", "disk cache")
        timed = {c["config"]["BLOCK"]: c["ms"] for c in pick["candidates"]}
        assert set(timed) == {16, 32, 64} and all(ms is not None and ms > 0 for ms in timed.values())
        assert timed[pick["config"]["BLOCK"]] == min(timed.values())  # the fastest candidate, as Triton picks


def test_an_aa_of_autotuned_kernels_runs_both_sides_at_one_config_and_passes(library: Path, tmp_path: Path):
    out = tmp_path / "aa"
    arguments = ["ab", "HEAD~1", "HEAD", "--project", str(library), "--suite", "gpu", "--time-budget", "30"]
    result = CliRunner().invoke(perfbot, [*arguments, "--out-dir", str(out)])
    assert result.exit_code == 0, result.output
    base, head = (json.loads((out / f"{side}.json").read_text())["benchmarks"] for side in ("base", "head"))
    ran = {(b["kernel"], b["case"]): [p["config"] for p in b["autotune"]] for b in base}
    for bench in head:
        assert [p["config"] for p in bench["autotune"]] == ran[(bench["kernel"], bench["case"])]
        assert all(p["origin"] != "pinned" or p["pinned_to"] == "the base's pick" for p in bench["autotune"])
