"""A refused GPU check posts nothing. gpu-check.yml run as Actions would run it, against the
loopback GitHub (tests/fake_github.py): the decide job's own steps (who dispatched, the GPU kinds,
verify-head) decide on a GitHub-hosted runner; each later job runs only if its `if:` holds for
what the jobs before it gave (tests/actions.py); the comment job's own post step posts. Only the
steps that install (perfbot from this checkout stands in) and the GPU job (a report it would have
uploaded stands in) are not run."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.actions import Contexts, job_runs, run_job
from tests.conftest import ROOT, quick_first
from tests.fake_github import FakeGitHub
from tests.helpers import make_results

WORKFLOW = ROOT / ".github" / "workflows" / "gpu-check.yml"
REPO = "octo/perfbot"
HEAD, EARLIER = "c" * 40, "e" * 40


def _jobs() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())["jobs"]


def _without_installs(job: dict) -> dict:
    """The job with its install steps left out: a .venv whose perfbot is this checkout's stands in."""
    steps = [s for s in job["steps"] if "install.sh" not in s.get("run", "")]
    return {**job, "steps": steps}


def _checkout(work: Path, owners: str = "@octo/perfbot-maintainers") -> Path:
    """A job's workspace: the base's .github (this checkout's scripts, its CODEOWNERS naming
    `owners` for the placeholder) and a .venv/bin/perfbot that runs this checkout's perfbot."""
    work.mkdir(parents=True, exist_ok=True)
    if not (work / ".github").exists():
        shutil.copytree(ROOT / ".github", work / ".github")
        codeowners = work / ".github" / "CODEOWNERS"
        codeowners.write_text(codeowners.read_text().replace("@OWNER/perfbot-maintainers", owners))
    script = work / ".venv" / "bin" / "perfbot"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m perfbot "$@"\n')
    script.chmod(0o755)
    return work


@dataclass(frozen=True)
class Run:
    decide: str  # the decide job's result
    accepted: str  # its output
    check: str  # the GPU job's result: skipped where it did not run
    comment: str  # the comment job's: skipped where it did not run


def dispatch(
    fake: FakeGitHub, tmp_path: Path, actor: str, sha: str, run_id: int, owners: str = "@octo/perfbot-maintainers"
) -> Run:
    """One dispatch of gpu-check.yml for PR 7 by `actor`, every job in turn."""
    jobs = _jobs()
    temp = tmp_path / f"runner-{run_id}"
    contexts = Contexts(
        github={
            "token": fake.token,
            "actor": actor,
            "triggering_actor": actor,
            "repository": REPO,
            "run_id": str(run_id),
            "server_url": "https://github.com",
        },
        inputs={"pr": 7, "sha": sha},
        runner={"temp": str(temp)},
        matrix={"gpu": "a100"},
    )
    env = {
        # python3 is this venv's, as setup-python's is on the runner: not a version manager's shim,
        # whose shell scripts cost more than the Python it starts.
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "HOME": str(tmp_path),
        "GITHUB_API_URL": fake.url,
        "GITHUB_REPOSITORY": REPO,
    }
    work = _checkout(tmp_path / f"work-{run_id}", owners)
    decide = run_job(_without_installs(jobs["decide"]), contexts, work, env, temp / "decide")
    contexts.needs = {"decide": {"result": decide.result, "outputs": decide.outputs}}
    check = "skipped"
    if job_runs(jobs["check"], contexts):
        # The GPU job's own steps up to its verify-head, then a measurement that passed.
        steps = jobs["check"]["steps"]
        verify = next(i for i, s in enumerate(steps) if "verify-head" in s.get("run", ""))
        gate = run_job({**jobs["check"], "steps": steps[: verify + 1]}, contexts, work, env, temp / "check")
        check = gate.result
    if check == "success":  # its report, as download-artifact lays it out
        from perfbot.deciding import comparison
        from perfbot.deciding.compare import compare
        from perfbot.deciding.thresholds import load_policy

        summary = comparison.summarize(
            compare(make_results(seed=1), make_results(seed=2), load_policy(ROOT / "thresholds.yaml"))
        )
        report = temp / "perfbot" / "reports" / "perfbot-report-a100" / "comparison.json"
        report.parent.mkdir(parents=True)
        report.write_text(comparison.to_text(summary))
    contexts.needs["check"] = {"result": check, "outputs": {}}
    comment = "skipped"
    if job_runs(jobs["comment"], contexts):
        done = run_job(_without_installs(jobs["comment"]), contexts, work, env, temp / "comment")
        assert done.result == "success", [(d.stdout, d.stderr) for d in done.logs]
        comment = done.result
    return Run(decide.result, decide.outputs.get("accepted", ""), check, comment)


def _github(fork: bool) -> FakeGitHub:
    fake = FakeGitHub(token="ghs_dispatchTOKEN")
    fake.add_collaborator(REPO, "alice", "maintain")
    fake.add_collaborator(REPO, "bob", "write")
    fake.add_pull(REPO, 7, HEAD, earlier=(EARLIER,), head_repo="mallory/perfbot" if fork else None)
    return fake


def _writes(fake: FakeGitHub) -> list[str]:
    return [f"{r.method} {r.path}" for r in fake.requests if r.method != "GET"]


@pytest.mark.parametrize(
    ("actor", "fork", "sha"),
    quick_first(
        3,
        [
            ("bob", True, HEAD),  # a writer, a fork's real head: the case of issue 53
            ("github-actions[bot]", True, HEAD),  # a branch's edited gpu-request.yml, a fork's head
            ("perfbot-app[bot]", True, HEAD),
            ("alice", True, EARLIER),  # a maintainer, but not the head
            ("alice", False, EARLIER),
            ("bob", False, "f" * 40),  # no commit of the pull request
            ("alice", True, HEAD[:39]),  # not a full commit
            ("alice", True, HEAD.upper()),
        ],
    ),
)
def test_a_refused_dispatch_leaves_no_status_and_no_comment(actor: str, fork: bool, sha: str, tmp_path: Path):
    with _github(fork) as fake:
        run = dispatch(fake, tmp_path, actor, sha, 1)
        writes = _writes(fake)
        asked = [r.path for r in fake.requests]
    assert run == Run(decide="failure", accepted="", check="skipped", comment="skipped")
    assert writes == [] and fake.statuses == {} and fake.comments == {}
    if len(sha) != 40 or not sha.islower():
        assert f"/repos/{REPO}/pulls/7" not in asked  # refused on its form, before asking GitHub


@pytest.mark.parametrize(
    ("actor", "fork"),
    [
        # A maintainer, by hand, the fork's head they read: the first run of the test below.
        pytest.param("alice", False, marks=pytest.mark.slow),
        ("bob", False),  # a writer, a branch of this repository
        pytest.param("github-actions[bot]", False, marks=pytest.mark.slow),  # gpu-request.yml
    ],
)
def test_an_accepted_dispatch_measures_and_posts(actor: str, fork: bool, tmp_path: Path):
    with _github(fork) as fake:
        run = dispatch(fake, tmp_path, actor, HEAD, 1)
        _measured_and_posted(fake, run)


def _measured_and_posted(fake: FakeGitHub, run: Run) -> None:
    (posted,) = fake.comments[(REPO, 7)]
    (status,) = fake.statuses[(REPO, HEAD)]
    assert run == Run(decide="success", accepted="true", check="success", comment="success")
    assert posted["body"].startswith("**perfbot:**") and status["state"] == "success"
    assert status["target_url"] == f"https://github.com/{REPO}/actions/runs/1"


def test_a_writers_refused_run_after_a_maintainers_leaves_the_maintainers_report(tmp_path: Path):
    """The order of issue 53: a maintainer's check of a fork's head posts a green report; then a
    writer dispatches the same pull request and head. Nothing of the writer's run reaches GitHub
    but reads: the report and the status stay the maintainer's run's. (The maintainer's run is
    test_an_accepted_dispatch_measures_and_posts's for alice and a fork, checked as it checks.)"""
    with _github(fork=True) as fake:
        accepted = dispatch(fake, tmp_path, "alice", HEAD, 1)
        _measured_and_posted(fake, accepted)
        before = [dict(c) for c in fake.comments[(REPO, 7)]]
        writes = len(_writes(fake))
        refused = dispatch(fake, tmp_path, "bob", HEAD, 2)
        assert len(_writes(fake)) == writes
        assert fake.comments[(REPO, 7)] == before
        (status,) = fake.statuses[(REPO, HEAD)]
    assert accepted.comment == "success" and refused.comment == "skipped" and refused.check == "skipped"
    assert (status["state"], status["target_url"]) == ("success", f"https://github.com/{REPO}/actions/runs/1")


def test_the_hosted_job_decides_and_the_later_jobs_depend_on_its_decision():
    """The workflow's shape that the runs above rely on: every refusal in the decide job, on a
    GitHub-hosted runner; the GPU job needs it and runs only where it accepted; the comment job
    runs only for an accepted run (never on the GPU job's failure alone), after the GPU job."""
    jobs = _jobs()
    decider, check, comment = jobs["decide"], jobs["check"], jobs["comment"]
    assert decider["runs-on"] == "ubuntu-latest" and "needs" not in decider
    assert decider["permissions"] == {"contents": "read", "pull-requests": "read"}
    assert decider["outputs"]["accepted"] == "${{ steps.decide.outputs.accepted }}"
    decide = next(s for s in decider["steps"] if s.get("id") == "decide")
    assert decide is decider["steps"][-1]
    # accepted=true is written last, after verify-head passed: anything else leaves it unset.
    assert decide["run"].rstrip().splitlines()[-1] == 'echo "accepted=true" >> "$GITHUB_OUTPUT"'
    assert "perfbot verify-head" in decide["run"] and "--same-repository" in decide["run"]
    assert decide["env"]["BY_A_MAINTAINER"] == "${{ steps.dispatcher.outputs.maintainer }}"
    assert decide["env"]["HEAD_SHA"] == "${{ inputs.sha }}" and decide["env"]["PR_NUMBER"] == "${{ inputs.pr }}"
    installed = [i for i, s in enumerate(decider["steps"]) if "install.sh core" in s.get("run", "")]
    assert installed and installed[0] < decider["steps"].index(decide)

    assert check["needs"] == "decide" and check["if"] == "needs.decide.outputs.accepted == 'true'"
    assert "self-hosted" in check["runs-on"]
    assert comment["needs"] == ["decide", "check"] and comment["runs-on"] == "ubuntu-latest"
    condition = comment["if"]
    assert condition.startswith("always() && needs.decide.outputs.accepted == 'true'")
    assert "needs.check.result != 'skipped'" in condition and "needs.check.result != 'cancelled'" in condition
    # No job outside the decide job's decision posts: the comment job is the only one with a write token.
    writers = {name for name, job in jobs.items() if "write" in job.get("permissions", {}).values()}
    assert writers == {"comment"}


def _needs(accepted: str, check: str) -> Contexts:
    decide = {"result": "success" if accepted == "true" else "failure", "outputs": {"accepted": accepted}}
    return Contexts(needs={"decide": decide, "check": {"result": check}})


@pytest.mark.parametrize(
    ("accepted", "check", "posts"),
    [
        ("true", "success", True),
        ("true", "failure", True),  # a slowdown, or a GPU job that could not measure
        ("", "failure", False),  # refused: whatever the GPU job did
        ("", "success", False),
        ("false", "failure", False),
        ("True ", "failure", False),
        ("true", "skipped", False),
        ("true", "cancelled", False),  # superseded by a newer accepted run
    ],
)
def test_the_comment_job_runs_only_for_an_accepted_run(accepted: str, check: str, posts: bool):
    assert job_runs(_jobs()["comment"], _needs(accepted, check)) is posts
    assert job_runs(_jobs()["check"], _needs(accepted, "skipped")) is (accepted == "true")


def test_only_an_accepted_run_can_supersede_another():
    """No workflow-wide concurrency group: a dispatch cancels nothing before it is decided. The
    GPU job, which only accepted runs reach, is grouped by pull request and GPU kind, so a newer
    accepted run supersedes an older one on each GPU (whose comment job then does not run); the
    decision is grouped by its own run, a group that limits nothing: a shared one would let a newer
    dispatch replace a pending one, and without one zizmor's concurrency-limits audit flags the job
    (test_workflows.py runs it)."""
    data = yaml.safe_load(WORKFLOW.read_text())
    assert "concurrency" not in data
    jobs = data["jobs"]
    assert jobs["check"]["concurrency"] == {
        "group": "gpu-check-${{ inputs.pr }}-${{ matrix.gpu }}",
        "cancel-in-progress": True,
    }
    assert jobs["decide"]["concurrency"] == {
        "group": "gpu-check-decide-${{ github.run_id }}",
        "cancel-in-progress": False,
    }
    assert jobs["comment"]["concurrency"] == {"group": "perfbot-comment-${{ inputs.pr }}", "cancel-in-progress": False}


def test_nothing_runs_or_posts_while_codeowners_holds_the_placeholder(tmp_path: Path):
    """A maintainer's dispatch of a fork's real head, in a repository whose CODEOWNERS still names
    @OWNER/perfbot-maintainers: refused in the hosted job, before anyone is asked anything."""
    with _github(fork=True) as fake:
        run = dispatch(fake, tmp_path, "alice", HEAD, 1, owners="@OWNER/perfbot-maintainers")
        asked = list(fake.requests)
    assert run == Run(decide="failure", accepted="", check="skipped", comment="skipped")
    assert asked == [] and fake.statuses == {} and fake.comments == {}
