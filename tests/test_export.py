"""pytest-benchmark interop: our export goes through pytest-benchmark's own compare command."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.records import results
from tests.helpers import make_results


def test_export_is_read_by_pytest_benchmark_compare(tmp_path: Path):
    runner = CliRunner()
    exported = []
    for seed in (1, 2):
        source = tmp_path / f"run{seed}.json"
        results.save(make_results(seed=seed), source)
        out = tmp_path / f"000{seed}_run.json"
        result = runner.invoke(perfbot, ["export", str(source), "--out", str(out)])
        assert result.exit_code == 0, result.output
        exported.append(out)
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "pytest-benchmark"),
            "compare",
            *map(str, exported),
            "--csv",
            "table",
            "--columns",
            "median,rounds",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Failed to load" not in done.stdout + done.stderr
    rows = list(csv.DictReader((tmp_path / "table.csv").open()))
    assert len(rows) == 2 * 9  # 9 benchmarks from each file
    fused = [r for r in rows if r["name"] == "perfbot::models::fused[M8192xK2048xN16384-bfloat16]"]
    expected = sorted(make_results(seed=seed).benchmarks[0].median_ms / 1000 for seed in (1, 2))
    # The CSV prints six significant digits.
    assert sorted(float(r["median"]) for r in fused) == pytest.approx(expected, rel=1e-5)
    assert {int(r["rounds"]) for r in fused} == {30}


def test_export_keeps_an_existing_file(tmp_path: Path):
    source = tmp_path / "run.json"
    results.save(make_results(seed=1), source)
    out = tmp_path / "out.json"
    out.write_text("keep")
    result = CliRunner().invoke(perfbot, ["export", str(source), "--out", str(out)])
    assert result.exit_code == 2 and out.read_text() == "keep"
    assert CliRunner().invoke(perfbot, ["export", str(source), "--out", str(out), "--overwrite"]).exit_code == 0
    assert json.loads(out.read_text())["benchmarks"]
