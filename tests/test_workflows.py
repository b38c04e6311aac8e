"""The workflow files: valid, audited by zizmor offline, pinned, least privilege, no
untrusted expressions in shell, and the baseline push that retries after losing a race."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.helpers import make_results

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def _load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def test_zizmor_offline_finds_nothing():
    done = subprocess.run([str(BIN / "zizmor"), "--offline", "--format", "plain", str(ROOT / ".github")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr


def test_workflows_match_githubs_schema():
    done = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                           *map(str, WORKFLOWS)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    action = ROOT / ".github" / "actions" / "gpu-setup" / "action.yml"
    done = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(action)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def _steps():
    for path in [*WORKFLOWS, ROOT / ".github" / "actions" / "gpu-setup" / "action.yml"]:
        data = _load(path)
        jobs = data.get("jobs", {}).values() if "jobs" in data else [data["runs"]]
        for job in jobs:
            for step in job.get("steps", []):
                yield path.name, step


def test_no_expression_inside_run_and_actions_pinned_by_sha():
    for name, step in _steps():
        assert "${{" not in step.get("run", ""), f"{name}: {step.get('name')} interpolates into shell"
        uses = step.get("uses")
        if uses and not uses.startswith("$/"):
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), f"{name}: {uses} is not pinned by SHA"


def test_least_privilege():
    writers = {}
    for path in WORKFLOWS:
        data = _load(path)
        assert data["permissions"] == {}, f"{path.name}: top-level permissions must be empty"
        for job_name, job in data["jobs"].items():
            assert "timeout-minutes" in job, f"{path.name}:{job_name} has no timeout"
            for scope, level in job.get("permissions", {}).items():
                if level == "write":
                    writers.setdefault(scope, set()).add(path.name)
    assert writers == {"pull-requests": {"comment.yml"}, "statuses": {"comment.yml"}, "contents": {"baseline.yml"}}


def test_gpu_check_shape():
    data = _load(ROOT / ".github" / "workflows" / "gpu-check.yml")
    job = data["jobs"]["check"]
    assert job["permissions"] == {"contents": "read"}
    assert data["concurrency"]["cancel-in-progress"] is True
    assert "head.repo.full_name == github.repository" in job["if"]  # forks only by a maintainer's dispatch
    assert "self-hosted" in job["runs-on"] and "vars.PERFBOT_GPU_LABEL || 'a100'" in " ".join(job["runs-on"])
    comment = _load(ROOT / ".github" / "workflows" / "comment.yml")
    triggers = comment.get("on", comment.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["workflow_run"]["workflows"] == [data["name"]]


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("existing_branch", [False, True])
def test_push_baseline_retries_after_losing_a_race(tmp_path: Path, existing_branch: bool):
    from perfbot import results

    remote = tmp_path / "remote.git"
    _git("init", "--quiet", "--bare", str(remote))
    if existing_branch:
        seed = tmp_path / "seed"
        _git("init", "--quiet", str(seed))
        _git("checkout", "--quiet", "--orphan", "perfbot-baselines", cwd=seed)
        (seed / "README").write_text("baselines\n")
        _git("add", "README", cwd=seed)
        _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "start", cwd=seed)
        _git("push", "--quiet", str(remote), "HEAD:refs/heads/perfbot-baselines", cwd=seed)
    # The first push is rejected, as when another run pushed first.
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\nif [ ! -f {tmp_path}/raced ]; then touch {tmp_path}/raced; "
                    "echo 'rejected: fetch first' >&2; exit 1; fi\nexit 0\n")
    hook.chmod(0o755)
    run_file = tmp_path / "main.json"
    results.save(make_results(seed=1), run_file)
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "PERFBOT": str(BIN / "perfbot"), "PERFBOT_BASELINE_REMOTE": str(remote),
           "GITHUB_SHA": "c0ffee", "HOME": str(tmp_path)}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "push-baseline.sh"), str(run_file)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attempt 2" in done.stdout and "push rejected (attempt 1)" in done.stderr
    files = _git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "perfbot-baselines").splitlines()
    assert [f for f in files if f.startswith("store/nvidia-h200/")] and ("README" in files) == existing_branch
    assert _git("--git-dir", str(remote), "log", "-1", "--format=%s", "perfbot-baselines") == "baseline: c0ffee"
