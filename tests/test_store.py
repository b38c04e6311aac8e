"""The baseline store on real files: history kept, atomic writes, corrupt files reported."""

import os
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot import results, store
from perfbot.cli import perfbot
from perfbot.errors import BadInput
from tests.helpers import make_results


def _save(tmp_path: Path, name: str, loaded) -> Path:
    path = tmp_path / name
    results.save(loaded, path)
    return path


def test_every_run_is_kept_and_the_newest_is_the_baseline(tmp_path: Path):
    directory = tmp_path / "store"
    first = store.add(directory, make_results(seed=1))
    second = store.add(directory, replace(make_results(seed=2), created="2026-12-01T00:00:00+00:00"))
    assert first.parent == second.parent == directory / "nvidia-h200"
    assert [e.path for e in store.history(directory)] == [first, second]
    path, baseline = store.latest(directory, "NVIDIA H200")
    assert path == second and baseline.created.startswith("2026-12-01")
    assert [p.name for p in directory.rglob("*") if p.name.startswith(".")] == []  # no temporary files left


def test_the_same_run_twice_is_refused_not_overwritten(tmp_path: Path):
    directory = tmp_path / "store"
    stored = store.add(directory, make_results(seed=1))
    before = stored.read_bytes()
    with pytest.raises(BadInput, match="already stored"):
        store.add(directory, make_results(seed=1))
    assert stored.read_bytes() == before


def test_a_corrupt_file_is_reported_never_skipped_or_replaced(tmp_path: Path):
    directory = tmp_path / "store"
    store.add(directory, make_results(seed=1))
    corrupt = directory / "nvidia-h200" / "20991231T000000Z-ffffffffffff.json"
    corrupt.write_text('{"format": 1, "benchm')
    with pytest.raises(BadInput, match="corrupt file in the baseline store") as error:
        store.latest(directory, "NVIDIA H200")
    assert corrupt.name in str(error.value)
    store.add(directory, make_results(seed=3))  # storing a new run leaves the corrupt file alone
    with pytest.raises(BadInput, match="corrupt"):
        store.history(directory)
    assert corrupt.read_text() == '{"format": 1, "benchm'


def test_no_baseline_and_bad_store(tmp_path: Path):
    with pytest.raises(BadInput, match="baseline update"):
        store.latest(tmp_path / "empty", "NVIDIA H200")
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput, match="must be a directory"):
        store.add(tmp_path / "file", make_results(seed=1))
    with pytest.raises(BadInput, match="name no GPU"):
        store.add(tmp_path / "s", make_results(seed=1, environment={"gpu_name": None}))


def test_cli_update_show_and_compare_with_the_store(tmp_path: Path):
    directory = tmp_path / "store"
    runner = CliRunner()
    base = _save(tmp_path, "base.json", make_results(seed=1))
    slow = _save(tmp_path, "slow.json", make_results({("fused", "gemma-2b"): 1.10}, seed=2))
    result = runner.invoke(perfbot, ["baseline", "update", str(base), "--store", str(directory)])
    assert result.exit_code == 0 and "stored" in result.output
    shown = runner.invoke(perfbot, ["baseline", "show", "--store", str(directory)])
    assert shown.exit_code == 0 and "NVIDIA H200" in shown.output and "baseline" in shown.output
    compared = runner.invoke(perfbot, ["compare", "--store", str(directory), str(slow)])
    assert compared.exit_code == 1, compared.output
    other = _save(tmp_path, "a100.json", make_results(seed=2, environment={"gpu_name": "NVIDIA A100"}))
    missing = runner.invoke(perfbot, ["compare", "--store", str(directory), str(other)])
    assert missing.exit_code == 2 and "no baseline stored for 'NVIDIA A100'" in missing.output


def test_cli_refuses_to_store_a_run_with_wrong_results(tmp_path: Path):
    from perfbot.results import Failure

    broken = replace(make_results(seed=1), failures=[Failure("fused", {"M": 1}, "bfloat16", "wrong result")])
    path = _save(tmp_path, "broken.json", broken)
    result = CliRunner().invoke(perfbot, ["baseline", "update", str(path), "--store", str(tmp_path / "s")])
    assert result.exit_code == 2 and "wrong result" in result.output
    assert not (tmp_path / "s").exists()


def test_cli_show_reports_corrupt_files_with_exit_2(tmp_path: Path):
    directory = tmp_path / "store"
    store.add(directory, make_results(seed=1))
    (directory / "nvidia-h200" / "bad.json").write_text("[]")
    result = CliRunner().invoke(perfbot, ["baseline", "show", "--store", str(directory)])
    assert result.exit_code == 2 and "bad.json" in result.output


def test_store_defaults_to_the_project_setting(project: Path):
    result = CliRunner().invoke(perfbot, ["baseline", "show", "--project", str(project)])
    assert result.exit_code == 0
    assert str(project / ".perfbot" / "store") in result.output
    assert os.path.isdir(project / "kernels")
