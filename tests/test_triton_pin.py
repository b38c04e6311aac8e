"""The Triton pin: the installed Triton set against `[tool.perfbot] triton-commit`, warned of by
every measuring command and recorded in the results."""

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.measuring import triton_pin
from perfbot.records import results
from tests.conftest import ROOT
from tests.test_runner_cpu import TINY, _git, init_repo

PIN = "7c56a5e40f7fd928dfd5c72902d5def0097db73a"  # Triton 3.6.0's tag (triton_pin.RELEASE_COMMITS)
OTHER = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    "version,commit,pin,verdict",
    [
        ("3.6.0", PIN, PIN, "same"),  # the release, its tag commit known
        ("3.6.0+git7c56a5e4", "7c56a5e4", PIN, "same"),  # a source build: its version's abbreviation
        ("3.7.0+gitabcdef12", "abcdef12", PIN, "different"),
        ("3.6.0", PIN, OTHER, "different"),
        ("3.9.0", None, PIN, "different"),  # no commit known, but the pin is a release: compared by version
        ("3.6.0", None, PIN, "same"),  # a record that predates the tag table
        ("3.9.0", None, OTHER, "unknown"),  # no commit, and the pin is no known release
        ("unknown", None, PIN, "unknown"),
        (None, None, PIN, "unknown"),
    ],
)
def test_the_installed_triton_against_the_pin(version, commit, pin, verdict):
    found = triton_pin.check(version, commit, pin)
    assert found.verdict == verdict
    assert found.matches == {"same": True, "different": False, "unknown": None}[verdict]
    assert (found.warning is None) == (verdict == "same")


def test_the_warning_names_both_tritons_and_what_to_do():
    assert triton_pin.check("3.9.0", None, PIN).warning == (
        "Triton 3.9.0 (commit unknown) is not the Triton [tool.perfbot] triton-commit pins, 7c56a5e40f7f "
        "(Triton 3.6.0): its timings may not compare with results measured with the pin"
    )
    assert "set PERFBOT_TRITON_COMMIT" in triton_pin.check("3.9.0", None, OTHER).warning


def test_this_projects_pin_is_the_release_the_gpu_extra_installs():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pin = project["tool"]["perfbot"]["triton-commit"]
    gpu = project["project"]["optional-dependencies"]["gpu"]
    release = triton_pin.pinned_release(pin)
    assert release is not None, f"{pin} is no release RELEASE_COMMITS knows"
    assert f"triton=={release}" in gpu, gpu


def test_committed_results_load_without_the_pin_fields():
    loaded = results.load(ROOT / "examples" / "rmsnorm" / "results" / "h200.json")
    assert loaded.environment.triton_pin is None and loaded.environment.triton_pin_matches is None


def _run(project: Path, out: Path):
    (project / "kernels" / "suites.yaml").write_text(TINY)
    args = ["run", "--project", str(project), "--suite", "tiny", "--kernel", "eager", "--samples", "10"]
    return CliRunner().invoke(perfbot, [*args, "--out", str(out)])


@pytest.mark.parametrize("built_from,matches", [(PIN, True), (OTHER, False)])
def test_a_run_records_the_pin_and_warns_when_it_does_not_hold(
    gpu, project, tmp_path, monkeypatch, built_from, matches
):
    monkeypatch.setenv("PERFBOT_TRITON_COMMIT", built_from)
    out = tmp_path / "results.json"
    done = _run(project, out)
    assert done.exit_code == 0, done.output
    environment = results.load(out).environment
    assert (environment.triton_pin, environment.triton_pin_matches) == (PIN, matches)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("perfbot: warning: ")]
    assert len(warnings) == (0 if matches else 1), done.stderr
    if not matches:
        assert f"(commit {OTHER})" in warnings[0] and "7c56a5e40f7f (Triton 3.6.0)" in warnings[0]


def test_env_shows_where_the_commit_came_from_and_the_pin(project, monkeypatch):
    monkeypatch.setenv("PERFBOT_TRITON_COMMIT", OTHER)
    shown = CliRunner().invoke(perfbot, ["env", "--project", str(project)])
    assert shown.exit_code == 0, shown.output
    lines = dict(line.split(None, 1) for line in shown.output.splitlines() if len(line.split(None, 1)) == 2)
    assert lines["triton_commit"] == OTHER
    assert lines["triton_commit_from"] == "the environment variable PERFBOT_TRITON_COMMIT"
    assert (lines["triton_pin"], lines["triton_pin_matches"]) == (PIN, "False")
    record = json.loads(CliRunner().invoke(perfbot, ["env", "--json", "--project", str(project)]).output)
    assert (record["triton_pin"], record["triton_pin_matches"]) == (PIN, False)


def test_each_side_of_an_ab_records_its_own_pin_and_warns_by_name(gpu, project, tmp_path, monkeypatch):
    repo = init_repo(project)
    (repo / "kernels" / "NOTES").write_text("head\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "head")
    monkeypatch.setenv("PERFBOT_TRITON_COMMIT", OTHER)
    out = tmp_path / "ab"
    args = ["ab", "HEAD~1", "--project", str(repo), "--suite", "tiny", "--kernel", "eager", "--samples", "12"]
    done = CliRunner().invoke(perfbot, [*args, "--out-dir", str(out)])
    assert done.exit_code == 0, done.output
    for side in ("base", "head"):
        environment = results.load(out / f"{side}.json").environment
        assert (environment.triton_pin, environment.triton_pin_matches) == (PIN, False)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("perfbot: warning: ")]
    assert [line.split(": ")[2] for line in warnings] == ["the base side", "the head side"], warnings
