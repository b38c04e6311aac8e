"""The workflow files: valid, audited by zizmor offline, pinned, least privilege, no
untrusted expressions in shell, only the base branch's workflows on the GPU runner, and the
baseline push that retries after losing a race and keeps the token off every command line."""

import base64
import copy
import functools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from tests.git_http import GitHttpServer
from tests.helpers import make_results

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def _load(path: Path) -> dict:
    """A workflow as YAML reads it, a copy of its own for each caller: parsed once per file and
    text (a workflow is read by some 200 tests here), by libyaml's parser where PyYAML has it."""
    return copy.deepcopy(_parsed(path, path.read_text()))


@functools.cache
def _parsed(path: Path, text: str) -> dict:
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@pytest.mark.parametrize(("persona", "accepted"), [("regular", set()), ("auditor", {"self-hosted-runner"})])
def test_zizmor_finds_only_the_self_hosted_runner(persona: str, accepted: set[str]):
    """The regular persona finds nothing; the auditor, only the GPU runner, which is the design."""
    done = subprocess.run(
        [
            str(BIN / "zizmor"),
            "--offline",
            "--persona",
            persona,
            "--no-ignores",
            "--format",
            "json",
            str(ROOT / ".github"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    findings = json.loads(done.stdout)
    assert {f["ident"] for f in findings} == accepted, done.stdout
    # Nothing is silenced: no ignore comment anywhere.
    assert not any("zizmor: ignore" in p.read_text() for p in (ROOT / ".github").rglob("*.yml"))


def test_workflows_match_githubs_schema():
    done = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    action = ROOT / ".github" / "actions" / "gpu-setup" / "action.yml"
    done = subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(action)],
        capture_output=True,
        text=True,
        timeout=120,
    )
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
        if uses and not uses.startswith("$/"):  # $/: this repository's own action, at the workflow's commit
            assert re.fullmatch(r"[\w.-]+/[\w.-]+(/[\w.-]+)?@[0-9a-f]{40}", uses), (
                f"{name}: {uses} is not pinned by SHA"
            )


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
    assert writers == {
        "pull-requests": {"gpu-check.yml"},
        "statuses": {"gpu-check.yml"},
        "contents": {"baseline.yml"},
        "actions": {"gpu-request.yml"},
        "issues": {"baseline.yml"},
        "pages": {"baseline.yml"},
        "id-token": {"baseline.yml"},
    }


def test_no_job_on_the_gpu_runner_holds_a_write_token():
    for path in WORKFLOWS:
        for name, job in _load(path)["jobs"].items():
            if "self-hosted" in job.get("runs-on", []):
                assert "write" not in job.get("permissions", {}).values(), f"{path.name}:{name}"


def _triggers(data: dict) -> dict:
    return data.get("on", data.get(True))  # YAML 1.1 reads a bare `on` as true


def test_only_the_base_branchs_own_workflows_reach_the_gpu_runner():
    """A pull request can edit workflow files in its branch; those run on pull_request events.
    So no workflow a pull request event starts may use the self-hosted runner: the GPU runs only
    what the default branch's workflows start (dispatch, push)."""
    for path in WORKFLOWS:
        data = _load(path)
        gpu = [name for name, job in data["jobs"].items() if "self-hosted" in job.get("runs-on", [])]
        if gpu:
            assert set(_triggers(data)) <= {"workflow_dispatch", "push"}, f"{path.name}: {sorted(_triggers(data))}"


def test_gpu_check_shape():
    data = _load(ROOT / ".github" / "workflows" / "gpu-check.yml")
    check, comment = data["jobs"]["check"], data["jobs"]["comment"]
    assert set(_triggers(data)) == {"workflow_dispatch"}
    assert check["permissions"] == {"contents": "read", "pull-requests": "read"}
    # Superseded runs are cancelled by accepted runs alone (tests/test_refused_runs.py).
    assert "concurrency" not in data and check["concurrency"]["cancel-in-progress"] is True
    assert "self-hosted" in check["runs-on"] and check["runs-on"][-1] == "${{ matrix.gpu }}"
    assert comment["runs-on"] == "ubuntu-latest" and comment["needs"] == ["decide", "check"]
    assert comment["concurrency"]["group"] == "perfbot-comment-${{ inputs.pr }}"
    # The poster is told the PR and the commit by the dispatch, and perfbot checks the PR's head.
    post = comment["steps"][-1]["run"]
    assert '--pr "$PR_NUMBER" --sha "$HEAD_SHA"' in post
    assert comment["env"]["HEAD_SHA"] == "${{ inputs.sha }}"
    measure = next(s for s in check["steps"] if s.get("id") == "measure")["run"]
    # The base's checkout judges the head's kernels, merged into the base's tip (HEAD there) and
    # measured against the tip: never against the merge-base, where a cherry-picked speedup of the
    # base's branch would hide a slowdown (tests/test_ab_merge.py).
    assert 'perfbot ab HEAD "$HEAD_SHA" --merge' in measure
    assert all("merge-base" not in line for line in measure.splitlines() if not line.strip().startswith("#"))
    # Full width: every suite; max-autotune is left to the baseline job.
    assert "--skip-kernel max-autotune" in measure and "--suite" not in measure
    # The head is verified before any step brings its code: an automatic dispatch must name a
    # head of this repository's own branches.
    names = [s.get("name", "") for s in check["steps"]]
    verify = names.index("Check that the commit is the pull request's head")
    assert verify < names.index("Check out the head (only its kernels are measured)")
    step = check["steps"][verify]
    assert step["env"]["BY_A_MAINTAINER"] == "${{ needs.decide.outputs.by-a-maintainer }}"
    assert "verify-head" in step["run"] and "--same-repository" in step["run"]
    request = _load(ROOT / ".github" / "workflows" / "gpu-request.yml")
    assert request["jobs"]["request"]["if"].startswith(
        "github.event.pull_request.head.repo.full_name == github.repository"
    )
    assert "gh workflow run gpu-check.yml" in request["jobs"]["request"]["steps"][0]["run"]


def test_the_gpu_job_checks_the_inputs_again_as_the_deciding_job_did():
    """The GPU job's first step checks the inputs' form with the lines the decide job decided with."""
    jobs = _load(ROOT / ".github" / "workflows" / "gpu-check.yml")["jobs"]
    decided = next(s for s in jobs["decide"]["steps"] if s.get("id") == "decide")["run"].splitlines()
    first = jobs["check"]["steps"][0]
    assert first["name"] == "Check the inputs" and first["run"].splitlines() == decided[:2]
    assert decided[0].startswith('[[ "$HEAD_SHA" =~ ^[0-9a-f]{40}$ ]] ||')
    assert decided[1].startswith('[[ "$PR_NUMBER" =~ ^[0-9]{1,9}$ ]] ||')


def _labels_job(data: dict, first: str) -> None:
    """The list of GPU kinds is read in one place, the first job, `first`, checked on a
    GitHub-hosted runner (which in the GPU check also reads the pull request, to decide:
    tests/test_refused_runs.py)."""
    job = data["jobs"][first]
    assert job["runs-on"] == "ubuntu-latest" and job["permissions"]["contents"] == "read"
    assert set(job["permissions"].items()) <= {("contents", "read"), ("pull-requests", "read")}
    step = next(s for s in job["steps"] if s.get("id") == "labels")
    assert step["run"] == ".github/perfbot/gpu-labels.sh"
    assert step["env"] == {"PERFBOT_GPU_LABELS": "${{ vars.PERFBOT_GPU_LABELS }}"}
    assert job["outputs"]["labels"] == "${{ steps.labels.outputs.labels }}"


def _matrix_job(job: dict, first: str) -> None:
    """One job per GPU kind, after the job `first` that read them, each on a runner of its label,
    none cancelled when another fails."""
    assert job["needs"] == first
    labels = f"${{{{ fromJSON(needs.{first}.outputs.labels) }}}}"
    assert job["strategy"] == {"fail-fast": False, "matrix": {"gpu": labels}}
    assert job["runs-on"] == ["self-hosted", "linux", "gpu", "${{ matrix.gpu }}"]
    assert "outputs" not in job  # a matrix job's outputs are one leg's: nothing is read from them


def test_gpu_check_runs_once_per_gpu_kind_and_posts_one_comment():
    data = _load(ROOT / ".github" / "workflows" / "gpu-check.yml")
    _labels_job(data, "decide")
    check, comment = data["jobs"]["check"], data["jobs"]["comment"]
    _matrix_job(check, "decide")
    upload = next(s for s in check["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "perfbot-report-${{ matrix.gpu }}" and upload["if"] == "always()"
    # The comment job trusts only the jobs' result and the checked list of labels, never a file's
    # word for which GPU it is or whether it passed.
    assert comment["env"]["CHECK_RESULT"] == "${{ needs.check.result }}"
    assert comment["env"]["GPU_LABELS"] == "${{ needs.decide.outputs.labels }}"
    assert "needs.check.outputs" not in (ROOT / ".github" / "workflows" / "gpu-check.yml").read_text()
    download = next(s for s in comment["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"] == {"pattern": "perfbot-report-*", "path": "${{ runner.temp }}/perfbot/reports"}
    assert "merge-multiple" not in download["with"]
    post = comment["steps"][-1]
    assert post["env"]["REPORTS"] == download["with"]["path"]
    assert '--section "$label=$REPORTS/perfbot-report-$label/comparison.json"' in post["run"]


def test_the_comment_job_downloads_with_a_release_that_keeps_each_artifact_in_its_folder():
    """download-artifact v4 puts every artifact a pattern matches in a folder named after it; v5
    and later put a lone match straight into path, where the post step would find no GPU's
    report. A later release needs the post step changed first."""
    text = (ROOT / ".github" / "workflows" / "gpu-check.yml").read_text()
    uses = re.findall(r"uses: actions/download-artifact@[0-9a-f]{40} # (v\S+)", text)
    assert uses and all(version.startswith("v4.") for version in uses), uses


def test_baseline_measures_each_gpu_kind_and_stores_every_run():
    data = _load(ROOT / ".github" / "workflows" / "baseline.yml")
    _labels_job(data, "gpus")
    measure, store = data["jobs"]["measure"], data["jobs"]["store"]
    _matrix_job(measure, "gpus")
    upload = next(s for s in measure["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "perfbot-baseline-${{ matrix.gpu }}"
    assert store["needs"] == "measure" and "needs.measure.result != 'cancelled'" in store["if"]
    download = next(s for s in store["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"] == {"pattern": "perfbot-baseline-*", "path": "${{ runner.temp }}/perfbot/baselines"}


def test_bisect_runs_on_one_gpu_kind():
    data = _load(ROOT / ".github" / "workflows" / "bisect.yml")
    job = data["jobs"]["bisect"]
    assert "strategy" not in job
    assert job["runs-on"][-1] == "${{ needs.allowed.outputs.gpu }}"  # the input, else the first label, checked
    assert _triggers(data)["workflow_dispatch"]["inputs"]["gpu"]["required"] is False


def _gpu_labels(value: str | None, tmp_path: Path) -> tuple[int, str]:
    output = tmp_path / "output"
    output.write_text("")
    env = {"PATH": os.environ["PATH"], "GITHUB_OUTPUT": str(output)}
    if value is not None:
        env["PERFBOT_GPU_LABELS"] = value
    done = subprocess.run(
        ["bash", str(ROOT / ".github" / "perfbot" / "gpu-labels.sh")], env=env, capture_output=True, text=True
    )
    if done.returncode:
        assert "::error::PERFBOT_GPU_LABELS must be a JSON array" in done.stderr
        assert value not in done.stderr.replace('e.g. ["a100", "h200"]', "")  # never echoed: no workflow commands
    return done.returncode, output.read_text()


@pytest.mark.parametrize(
    ("value", "labels"),
    [
        (None, ["a100"]),  # unset
        ("", ["a100"]),
        ('["a100", "h200"]', ["a100", "h200"]),
        ('[ "h200.sxm_141-gb" ]', ["h200.sxm_141-gb"]),
        ('["a100"] ["h200"]', None),  # two values
        ('"a100"', None),
        ("[]", None),
        ('["a100", "a100"]', None),
        ('["a100", 3]', None),
        ('["../a100"]', None),
        ('["a100/h200"]', None),
        ('["-a100"]', None),
        ('["a100\\n"]', None),
        ('["a100 h200"]', None),
        (f'["{"a" * 65}"]', None),
        (json.dumps([f"gpu{i}" for i in range(17)]), None),
        ("a100", None),
        ('["a100"]\n::warning::injected', None),
    ],
)
def test_the_gpu_labels_are_checked_as_perfbot_checks_them(value, labels, tmp_path: Path):
    from perfbot.records.schema import GPU_LABEL

    rc, output = _gpu_labels(value, tmp_path)
    if labels is None:
        assert rc == 2 and output == ""
    else:
        assert rc == 0 and output == f"labels={json.dumps(labels, separators=(',', ':'))}\n"
    parsed = None
    try:
        parsed = json.loads(value or '["a100"]')
    except ValueError:
        pass
    if isinstance(parsed, list) and 1 <= len(parsed) <= 16 and len(set(map(str, parsed))) == len(parsed):
        # Where only the labels themselves decide, the script and perfbot agree on each.
        assert (labels is not None) == all(isinstance(x, str) and GPU_LABEL.fullmatch(x) for x in parsed)


def _run_step(workflow: str, job: str, name: str) -> str:
    steps = _load(ROOT / ".github" / "workflows" / workflow)["jobs"][job]["steps"]
    return next(s["run"] for s in steps if s.get("name") == name)


def test_the_comment_step_posts_one_comment_with_a_section_per_gpu(tmp_path: Path):
    """The post step's own script, run as Actions runs it (bash -e), against the loopback GitHub:
    the labels come from the checked list, each section from its folder; a GPU with no report, or
    a symlink for one, could not measure; an artifact of a label not listed is ignored."""
    from perfbot.deciding import comparison
    from perfbot.deciding.compare import compare
    from perfbot.deciding.thresholds import load_policy
    from tests.fake_github import FakeGitHub

    policy = load_policy(ROOT / "thresholds.yaml")
    reports = tmp_path / "reports"

    def write(folder: str, slowdown: float, gpu: str) -> Path:
        env = {"gpu_name": gpu}
        summary = comparison.summarize(
            compare(
                make_results(seed=1, environment=env),
                make_results({("fused", "gemma-2b"): slowdown}, seed=2, environment=env),
                policy,
            )
        )
        (reports / folder).mkdir(parents=True)
        path = reports / folder / "comparison.json"
        path.write_text(comparison.to_text(summary))
        return path

    write("perfbot-report-a100", 1.0, "NVIDIA A100-SXM4-80GB")
    write("perfbot-report-h200", 1.10, "NVIDIA H200")
    forged = write("perfbot-report-b200", 1.0, "NVIDIA B200")  # not a listed label
    (reports / "perfbot-report-l40s").mkdir()
    (reports / "perfbot-report-l40s" / "comparison.json").symlink_to(forged)
    sha, token = "a" * 40, "ghs_commentTOKEN"
    with FakeGitHub(token=token) as fake:
        fake.add_pull("octo/perfbot", 7, sha)
        done = _post_step(tmp_path, fake.url, token, sha, '["a100","h200","l40s","mi300"]', reports, 1)
        assert done.returncode == 0, done.stdout + done.stderr
        (posted,) = fake.comments[("octo/perfbot", 7)]
        status = fake.statuses[("octo/perfbot", sha)][-1]
    body = posted["body"]
    assert body.startswith("**perfbot:** ❌ fails on h200; not measured on l40s, mi300; passes on a100\n")
    assert [line for line in body.splitlines() if line.startswith("### ")] == [
        "### a100 · NVIDIA A100-SXM4-80GB",
        "### h200 · NVIDIA H200",
        "### l40s",
        "### mi300",
    ]
    assert "B200" not in body and body.count("<!-- perfbot-report -->") == 1
    assert (status["state"], status["target_url"]) == ("failure", "https://github.com/octo/perfbot/actions/runs/1")


def test_a_gpu_whose_ab_stopped_gets_the_reason_in_its_section(tmp_path: Path):
    """The post step's script again: a GPU whose A/B stopped before comparing (a head that does
    not merge into the base's tip) left error.txt in its report; its section says that line,
    escaped. A symlink for one is not followed. The status fails: the measuring job failed."""
    from tests.fake_github import FakeGitHub

    reports = tmp_path / "reports"
    said = "the head 0123456789ab does not merge into the base's tip ba9876543210: conflicts in kernels/<x>.py"
    (reports / "perfbot-report-a100").mkdir(parents=True)
    (reports / "perfbot-report-a100" / "error.txt").write_text(said + "\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the comment\n")
    (reports / "perfbot-report-h200").mkdir()
    (reports / "perfbot-report-h200" / "error.txt").symlink_to(secret)
    sha, token = "b" * 40, "ghs_commentTOKEN"
    with FakeGitHub(token=token) as fake:
        fake.add_pull("octo/perfbot", 7, sha)
        done = _post_step(tmp_path, fake.url, token, sha, '["a100","h200"]', reports, 2)
        assert done.returncode == 0, done.stdout + done.stderr
        (posted,) = fake.comments[("octo/perfbot", 7)]
        status = fake.statuses[("octo/perfbot", sha)][-1]
    lines = posted["body"].splitlines()
    assert lines[0] == "**perfbot:** ⚠️ not measured on a100, h200"
    escaped = said.replace("<", "&lt;").replace(">", "&gt;")
    assert f"⚠️ Could not measure: its job stopped before comparing: {escaped}" in lines
    assert "⚠️ Could not measure: no comparison file; its job stopped before comparing (see the workflow run)" in lines
    assert "not for the comment" not in posted["body"]
    assert status["state"] == "failure"


@pytest.mark.slow
def test_the_store_step_stores_the_run_of_every_gpu_kind_in_one_push(tmp_path: Path):
    """The store job's own script: every main.json downloaded (one folder per artifact) goes into
    the store, each under its GPU, in one commit."""
    from perfbot.records import results

    remote = tmp_path / "remote.git"
    _git("init", "--quiet", "--bare", str(remote))
    runs = tmp_path / "runs"
    for label, gpu in (("a100", "NVIDIA A100-SXM4-80GB"), ("h200", "NVIDIA H200")):
        (runs / f"perfbot-baseline-{label}").mkdir(parents=True)
        results.save(
            make_results(seed=1, environment={"gpu_name": gpu}), runs / f"perfbot-baseline-{label}" / "main.json"
        )
    env = {
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "PYTHONPATH": str(ROOT),  # this checkout's perfbot
        "PERFBOT": str(BIN / "perfbot"),
        "PERFBOT_BASELINE_REMOTE": str(remote),
        "GITHUB_SHA": "c0ffee",
        "HOME": str(tmp_path),
        "RUNS": str(runs),
        "STEPS": str(tmp_path / "steps"),
        "PERFBOT_SITE_DIR": str(tmp_path / "site"),
        "GITHUB_OUTPUT": str(tmp_path / "output"),
    }
    script = _run_step("baseline.yml", "store", "Store on perfbot-baselines, check the history, rebuild the site")
    done = subprocess.run(["bash", "-e", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    # No step yet: nothing for the bisect and issue jobs, and the job passes.
    # The site is built, for the pages job.
    assert (tmp_path / "output").read_text() == "rc=0\nsite=true\nbisect-on=[]\nfailing=0\n"
    assert (tmp_path / "site" / "index.html").is_file()
    files = _git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "perfbot-baselines").splitlines()
    assert {f.split("/")[1] for f in files if f.startswith("store/nvidia-")} == {"nvidia-a100-sxm4-80gb", "nvidia-h200"}
    assert _git("--git-dir", str(remote), "rev-list", "--count", "perfbot-baselines") == "1"
    empty = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=ROOT,
        env={**env, "RUNS": str(tmp_path / "none")},
        capture_output=True,
        text=True,
    )
    assert empty.returncode == 3 and "nothing to store" in empty.stdout


def test_caches_are_job_private_and_only_main_saves_the_wheel():
    action = _load(ROOT / ".github" / "actions" / "gpu-setup" / "action.yml")
    steps = action["runs"]["steps"]
    saving = [s for s in steps if s.get("uses", "").startswith("actions/cache/save@")]
    assert len(saving) == 1 and saving[0]["if"] == "inputs.save-cache == 'true'"
    assert not any(s.get("uses", "").startswith("actions/cache@") for s in steps)  # restore+save in one
    private = steps[0]["run"]
    for variable in ("XDG_CACHE_HOME", "PIP_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):
        assert f'echo "{variable}=$cache' in private
    users = {
        path.name: [s.get("with", {}) for _, s in _steps_of(path) if s.get("uses", "").endswith("gpu-setup")]
        for path in WORKFLOWS
    }
    assert {name for name, uses in users.items() for w in uses if w.get("save-cache") == "true"} == {"baseline.yml"}


def _steps_of(path: Path):
    for job in _load(path)["jobs"].values():
        for step in job.get("steps", []):
            yield path.name, step


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def _baselines_branch(tmp_path: Path, runs: list) -> Path:
    """A bare remote whose perfbot-baselines branch holds a store of `runs`, as the store job
    finds it."""
    from tests.history_store import write_store

    remote, seed = tmp_path / "remote.git", tmp_path / "seed"
    _git("init", "--quiet", "--bare", str(remote))
    _git("init", "--quiet", str(seed))
    _git("checkout", "--quiet", "--orphan", "perfbot-baselines", cwd=seed)
    write_store(seed / "store", runs)
    _git("add", "store", cwd=seed)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "start", cwd=seed)
    _git("push", "--quiet", str(remote), "HEAD:refs/heads/perfbot-baselines", cwd=seed)
    return remote


@pytest.mark.parametrize("existing_branch", [False, True])
@pytest.mark.slow
def test_push_baseline_retries_after_losing_a_race(tmp_path: Path, existing_branch: bool):
    from perfbot.records import results

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
    hook.write_text(
        f"#!/bin/sh\nif [ ! -f {tmp_path}/raced ]; then touch {tmp_path}/raced; "
        "echo 'rejected: fetch first' >&2; exit 1; fi\nexit 0\n"
    )
    hook.chmod(0o755)
    run_file = tmp_path / "main.json"
    results.save(make_results(seed=1), run_file)
    site = tmp_path / "site"
    site.mkdir()
    (site / "stale.html").write_text("from an earlier run\n")
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),  # this checkout's perfbot, whatever the environment has installed
        "PERFBOT": str(BIN / "perfbot"),
        "PERFBOT_BASELINE_REMOTE": str(remote),
        "PERFBOT_SITE_DIR": str(site),
        "PERFBOT_STEPS_JSON": str(tmp_path / "steps.json"),  # written by each attempt: the second one too
        "GITHUB_SHA": "c0ffee",
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        ["bash", str(ROOT / ".github" / "perfbot" / "push-baseline.sh"), str(run_file)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attempt 2" in done.stdout and "push rejected (attempt 1)" in done.stderr
    assert json.loads((tmp_path / "steps.json").read_text())["steps"] == []
    files = _git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "perfbot-baselines").splitlines()
    assert [f for f in files if f.startswith("store/nvidia-h200/")] and ("README" in files) == existing_branch
    assert "store/reported-steps.json" in files and not [f for f in files if f.startswith("docs/")]
    # The site is left for the pages job to deploy, rebuilt whole; no branch is pushed for it.
    assert (site / "index.html").is_file() and list(site.glob("b/*")) and not (site / "stale.html").exists()
    assert _git("--git-dir", str(remote), "for-each-ref", "--format=%(refname)") == "refs/heads/perfbot-baselines"
    assert _git("--git-dir", str(remote), "log", "-1", "--format=%s", "perfbot-baselines") == "baseline: c0ffee"


@pytest.mark.parametrize("planted", ["store", "store/nvidia-h200"])
def test_push_baseline_writes_nothing_through_a_link_planted_on_the_branch(tmp_path: Path, planted: str):
    # Any workflow with contents: write can push perfbot-baselines: a link there leading out of the
    # clone is refused, the store itself by the script, a folder in it by perfbot (files.py).
    from perfbot.records import results

    remote, seed, outside = tmp_path / "remote.git", tmp_path / "seed", tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("precious")
    _git("init", "--quiet", "--bare", str(remote))
    _git("init", "--quiet", str(seed))
    _git("checkout", "--quiet", "--orphan", "perfbot-baselines", cwd=seed)
    (seed / planted).parent.mkdir(parents=True, exist_ok=True)
    (seed / planted).symlink_to(outside)
    _git("add", "-A", cwd=seed)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "planted", cwd=seed)
    _git("push", "--quiet", str(remote), "HEAD:refs/heads/perfbot-baselines", cwd=seed)
    run_file = tmp_path / "main.json"
    results.save(make_results(seed=1), run_file)
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "PERFBOT": str(BIN / "perfbot"), "PERFBOT_BASELINE_REMOTE": str(remote)}
    done = subprocess.run(
        ["bash", str(ROOT / ".github" / "perfbot" / "push-baseline.sh"), str(run_file)],
        capture_output=True,
        text=True,
        env={**env, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"is a symlink (to {outside})" in done.stderr or f"is a symlink to {outside}" in done.stderr
    assert [p.name for p in outside.iterdir()] == ["precious"]
    assert _git("--git-dir", str(remote), "rev-list", "--count", "perfbot-baselines") == "1"  # nothing pushed


def test_push_baseline_fences_what_the_check_printed_whatever_backticks_it_holds(tmp_path: Path):
    """The job's summary shows the history check's lines, which hold the store's values, as one code
    block: its fence is longer than any run of backticks in them and stands on a line of its own, so
    no stored value ends the block and renders as markdown. A perfbot that prints such values stands
    in for the check (perfbot's own lines put a stored value after others, never alone on a line)."""
    printed = (
        "NVIDIA H200 · fused · pr/t5: fused/gemm +3.10%\n"
        "```\n"
        "<img src=x onerror=alert(1)> **forged** @octo/everyone\n"
        "`````\n"
        "the last line, without a newline"
    )
    (tmp_path / "printed.txt").write_text(printed)
    stub = tmp_path / "perfbot"
    stub.write_text(
        '#!/bin/sh\ncase "$1" in\n  baseline) mkdir -p "$5" && cp "$3" "$5/" ;;\n'
        f"  history) cat {tmp_path / 'printed.txt'}; exit 1 ;;\nesac\n"
    )
    stub.chmod(0o755)
    remote, summary = tmp_path / "remote.git", tmp_path / "summary.md"
    _git("init", "--quiet", "--bare", str(remote))
    summary.write_text("before\n")
    run_file = tmp_path / "main.json"
    run_file.write_text("{}")
    done = subprocess.run(
        ["bash", str(ROOT / ".github" / "perfbot" / "push-baseline.sh"), str(run_file)],
        capture_output=True,
        text=True,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "PERFBOT": str(stub),
            "PERFBOT_BASELINE_REMOTE": str(remote),
            "GITHUB_SHA": "c0ffee",
            "GITHUB_STEP_SUMMARY": str(summary),
        },
        timeout=120,
    )
    assert done.returncode == 1 and "stored on perfbot-baselines" in done.stdout, done.stdout + done.stderr
    before, fence, *inside, closing = summary.read_text().splitlines()
    assert before == "before" and fence == closing == "`" * 6  # the longest run, 5, and one more
    assert "\n".join(inside) == printed
    # CommonMark ends a fenced block at a line of at least as many backticks, indented 3 spaces at most.
    assert not any(re.fullmatch(r" {0,3}`{6,}[ \t]*", line) for line in inside)


@pytest.mark.slow
def test_push_baseline_fails_the_job_once_for_a_step_after_storing_the_run(tmp_path: Path):
    from perfbot.records import results
    from tests.history_store import make_runs

    # The step starts at run 24 (0-based); the job of run 28 still holds it back (not yet clear
    # whose it is), the next one reports it, and four more runs show it is not reported again.
    # The jobs before run 28 would report nothing either: their runs are on the branch already.
    runs = make_runs(34, step=0.03, at=24, seed=3)
    remote = _baselines_branch(tmp_path, runs[:28])
    summary = tmp_path / "summary.md"
    summary.touch()
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),  # this checkout's perfbot, whatever the environment has installed
        "PERFBOT": str(BIN / "perfbot"),
        "PERFBOT_BASELINE_REMOTE": str(remote),
        "PERFBOT_SITE_DIR": str(tmp_path / "site"),
        "HOME": str(tmp_path),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    codes = []
    for index in range(28, len(runs)):  # main's runs arrive one by one, each stored and checked
        run_file = tmp_path / f"run-{index}.json"
        results.save(runs[index], run_file)
        done = subprocess.run(
            ["bash", str(ROOT / ".github" / "perfbot" / "push-baseline.sh"), str(run_file)],
            capture_output=True,
            text=True,
            env={**env, "GITHUB_SHA": f"run{index}"},
            timeout=120,
        )
        assert done.returncode in (0, 1), done.stdout + done.stderr
        assert "stored on perfbot-baselines" in done.stdout  # stored whatever the check found
        codes.append(done.returncode)
    state = json.loads(_git("--git-dir", str(remote), "show", "perfbot-baselines:store/reported-steps.json"))
    reported = [r["series"] for r in state["reported"]]
    # The step is in the fused kernel's two series; each is reported by one job, and only one.
    assert sorted(reported) == sorted(set(reported))
    assert {r["label"].split(" · ")[0] for r in state["reported"]} == {"fused"}
    assert 1 <= codes.count(1) <= len(reported) <= 2, codes
    assert codes[0] == 0, codes  # the step held back: stored, nothing failed
    assert codes[-4:] == [0] * 4, codes  # later jobs see the step as reported already
    files = _git("--git-dir", str(remote), "ls-tree", "-r", "--name-only", "perfbot-baselines").splitlines()
    assert len([f for f in files if f.startswith("store/nvidia-h200/")]) == len(runs)
    site = tmp_path / "site"
    assert (site / "index.html").is_file() and len(list((site / "b").iterdir())) == 6
    assert "find the commit: perfbot bisect" in summary.read_text()


@pytest.mark.slow
def test_push_baseline_keeps_the_acknowledged_steps_and_reports_none_of_them(tmp_path: Path):
    from perfbot.history import acknowledgements, steps
    from perfbot.history import series as history
    from perfbot.records import results
    from tests.history_store import make_runs, write_store

    runs = make_runs(41, step=0.03, at=24, seed=3)
    remote, seed = tmp_path / "remote.git", tmp_path / "seed"
    _git("init", "--quiet", "--bare", str(remote))
    _git("init", "--quiet", str(seed))
    _git("checkout", "--quiet", "--orphan", "perfbot-baselines", cwd=seed)
    write_store(seed / "store", runs[:40])
    found = steps.find_all(history.read(seed / "store"))
    assert len(found) == 2  # the step in fused on both cases
    acknowledgements.save(
        seed / "store", [f.acknowledgement("accepted", "alice", "2026-12-01T10:00:00Z") for f in found]
    )
    kept = (seed / "store" / acknowledgements.FILE).read_text()
    _git("add", "store", ":(exclude)store/.lock", cwd=seed)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "start", cwd=seed)
    _git("push", "--quiet", str(remote), "HEAD:refs/heads/perfbot-baselines", cwd=seed)
    run_file = tmp_path / "run-40.json"
    results.save(runs[40], run_file)
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "PERFBOT": str(BIN / "perfbot"),
        "PERFBOT_BASELINE_REMOTE": str(remote),
        "HOME": str(tmp_path),
        "GITHUB_SHA": "run40",
        "PYTHONPATH": str(ROOT),  # this checkout's perfbot, whatever the environment has installed
        "PERFBOT_SITE_DIR": str(tmp_path / "site"),
    }
    done = subprocess.run(
        ["bash", str(ROOT / ".github" / "perfbot" / "push-baseline.sh"), str(run_file)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "perfbot history: no new step" in done.stdout
    assert _git("--git-dir", str(remote), "show", f"perfbot-baselines:store/{acknowledgements.FILE}") == kept.strip()
    page = next((tmp_path / "site" / "b").glob(f"{found[0].series.slug}*"))
    assert "acknowledged by alice" in (page / "index.html" if page.is_dir() else page).read_text()


def test_push_baseline_authenticates_over_http_without_the_token_on_a_command_line(tmp_path: Path):
    """Against a real git smart-HTTP server that demands the token; every git process the
    script starts is logged with its arguments by a shim, as `ps` would show them."""
    from perfbot.records import results

    token = "ghs_baselineTOKEN0123456789"
    (tmp_path / "repos").mkdir()
    _git("init", "--quiet", "--bare", str(tmp_path / "repos" / "store.git"))
    shims = tmp_path / "shims"
    shims.mkdir()
    argv_log = tmp_path / "argv.log"
    real_git = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    (shims / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "git $*" >> {argv_log}\nexec {real_git} "$@"\n')
    (shims / "git").chmod(0o755)
    run_file = tmp_path / "main.json"
    results.save(make_results(seed=2), run_file)
    with GitHttpServer(tmp_path / "repos", "x-access-token", token) as server:
        env = {
            "PATH": f"{shims}:{BIN}:/usr/bin:/bin",
            "PYTHONPATH": str(ROOT),  # this checkout's perfbot, whatever the environment has installed
            "PERFBOT": str(BIN / "perfbot"),
            "HOME": str(tmp_path),
            "PERFBOT_BASELINE_REMOTE": f"{server.url}/store.git",
            "GITHUB_TOKEN": token,
            "GITHUB_SHA": "c0ffee",
            "GIT_TERMINAL_PROMPT": "0",
        }
        done = subprocess.run(
            ["bash", str(ROOT / ".github" / "perfbot" / "push-baseline.sh"), str(run_file)],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert server.authorizations and set(server.authorizations) == {server.expected}
        refused = subprocess.run(
            ["git", "ls-remote", f"{server.url}/store.git"],
            capture_output=True,
            text=True,
            env={**env, "GITHUB_TOKEN": ""},
            timeout=60,
        )
        assert refused.returncode != 0 and "could not read Username" in refused.stderr  # it demands the token
    pushed = _git(
        "--git-dir", str(tmp_path / "repos" / "store.git"), "ls-tree", "-r", "--name-only", "perfbot-baselines"
    )
    assert any(line.startswith("store/nvidia-h200/") for line in pushed.splitlines())
    logged = argv_log.read_text()
    encoded = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    assert "git clone" in logged and "git -C" in logged and token not in logged and encoded not in logged
    assert token not in done.stdout + done.stderr


def test_security_md_names_every_workflow_with_its_permissions():
    """SECURITY.md's table says, per workflow (and job), which token permissions it has: keep it
    true to the files."""
    rows = [line for line in (ROOT / "SECURITY.md").read_text().splitlines() if line.startswith("| `")]
    for path in WORKFLOWS:
        data = _load(path)
        for job_name, job in data["jobs"].items():
            row = next((r for r in rows if f"`{path.name}`, job `{job_name}`" in r), None) or next(
                (r for r in rows if f"`{path.name}`" in r.split("|")[1]), None
            )
            assert row is not None, f"SECURITY.md has no row for {path.name} ({job_name})"
            token = row.split("|")[4]
            for scope, level in job.get("permissions", {}).items():
                assert f"{scope}: {level}" in token, f"{path.name}:{job_name}: {scope}: {level} not in {token!r}"
            assert ("GPU runner" in row) == ("self-hosted" in job["runs-on"]), f"{path.name}:{job_name}"


@pytest.mark.parametrize("name", ["rmsnorm", "autotuned"])
def test_the_examples_check_workflow_is_valid_and_clean(name: str):
    """An example's CPU workflow (perfbot check), which an adopting repository copies."""
    example = ROOT / "examples" / name / ".github"
    done = subprocess.run(
        [
            str(BIN / "check-jsonschema"),
            "--builtin-schema",
            "vendor.github-workflows",
            *map(str, example.rglob("*.yml")),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    done = subprocess.run(
        [str(BIN / "zizmor"), "--offline", "--persona", "auditor", "--no-ignores", "--format", "json", str(example)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(done.stdout) == [], done.stdout


def test_install_refuses_to_install_a_repository_that_is_not_perfbot(tmp_path: Path):
    project = tmp_path / "project"
    shutil.copytree(ROOT / "examples" / "rmsnorm", project, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run(
        ["bash", str(ROOT / ".github" / "perfbot" / "install.sh"), "gpu"],
        cwd=project,
        env={k: v for k, v in os.environ.items() if k != "PERFBOT_SOURCE"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "set the repository variable PERFBOT_SOURCE" in done.stderr
    assert not (project / ".venv").exists()


@pytest.mark.parametrize(
    ("name", "package", "installed"),
    [("rmsnorm", "rmsnorm", "rmsnorm/suites.yaml"), ("autotuned", "tunedkernels", "tunedkernels/gelu.py")],
)
def test_the_example_project_installs_as_its_one_package(tmp_path: Path, name: str, package: str, installed: str):
    """install.sh gpu installs the measured project (`pip install .`): a literal copy of the
    example, results folder and all (and the subject's package where it is not the kernels'),
    must build into its one package."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "examples" / name, project, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(project),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / installed).is_file()
    assert {p.name for p in target.iterdir() if not p.name.endswith(".dist-info")} == {package}


def _base_scripts(work: Path) -> Path:
    """The scripts the job's checkout of the base has, in `work`: .github/perfbot of this checkout."""
    shutil.copytree(ROOT / ".github" / "perfbot", work / ".github" / "perfbot", dirs_exist_ok=True)
    return work


def _job_checkout(work: Path) -> Path:
    """A job's working folder with the base's scripts, whose `.venv/bin/perfbot` (what gpu-setup
    installs) runs this checkout's perfbot with this interpreter, wherever the tests' own
    environment lives."""
    _base_scripts(work)
    script = work / ".venv" / "bin" / "perfbot"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m perfbot "$@"\n')
    script.chmod(0o755)
    return work


def _post_step(
    home: Path, api: str, token: str, sha: str, labels: str, reports: Path, run: int, app_slug: str = ""
) -> subprocess.CompletedProcess:
    """The comment job's post step, run as Actions runs it, for PR 7 of octo/perfbot whose check failed."""
    return subprocess.run(
        ["bash", "-e", "-c", _run_step("gpu-check.yml", "comment", "Post the comment and set the status")],
        cwd=_job_checkout(home / "work"),
        env={
            "APP_SLUG": app_slug,
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "GITHUB_TOKEN": token,
            "GITHUB_API_URL": api,
            "GITHUB_REPOSITORY": "octo/perfbot",
            "PR_NUMBER": "7",
            "HEAD_SHA": sha,
            "CHECK_RESULT": "failure",
            "GPU_LABELS": labels,
            "REPORTS": str(reports),
            "RUN_URL": f"https://github.com/octo/perfbot/actions/runs/{run}",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_auto_bisect_jobs_wiring():
    """After the store job: a bisect job on the GPU runner of each GPU kind with a failing step,
    read-only, running the steps file's own commands; then the one job that may write issues,
    on a GitHub-hosted runner, with nothing else to write."""
    data = _load(ROOT / ".github" / "workflows" / "baseline.yml")
    store, bisect, issues = data["jobs"]["store"], data["jobs"]["bisect"], data["jobs"]["issues"]
    steps = {s.get("id") or s.get("name"): s for s in store["steps"]}
    assert store["outputs"] == {
        "bisect-on": "${{ steps.store.outputs.bisect-on }}",
        "failing": "${{ steps.store.outputs.failing }}",
        "steps-artifact": "${{ steps.steps-upload.outputs.artifact-id }}",  # for the bisect and issue jobs
        "site-artifact": "${{ steps.site.outputs.artifact_id }}",  # for the pages job
    }
    assert steps["store"]["env"]["STEPS"] == "${{ runner.temp }}/perfbot/steps"
    assert 'PERFBOT_STEPS_JSON="$STEPS/steps.json" .github/perfbot/push-baseline.sh' in steps["store"]["run"]
    upload = steps["steps-upload"]
    assert upload["with"]["name"] == "perfbot-steps" and upload["with"]["path"].endswith("/perfbot/steps/steps.json")
    assert upload["id"] == "steps-upload"
    # The run is stored, the steps handed on, and then the job fails on the slowdown, as before.
    names = [s.get("name") for s in store["steps"]]
    assert names.index("Upload the new steps") < names.index("Fail on a new slowdown") == len(names) - 1
    assert steps["Fail on a new slowdown"]["if"] == "steps.store.outputs.rc == '1'"

    # After the pages job: no GPU job of the run runs while the site deploys.
    assert bisect["needs"] == ["store", "pages"] and bisect["if"].startswith("!cancelled() && ")
    assert "needs.store.outputs.bisect-on != '[]'" in bisect["if"]
    assert "needs.store.outputs.steps-artifact != ''" in bisect["if"]
    assert bisect["strategy"]["matrix"] == {"gpu": "${{ fromJSON(needs.store.outputs.bisect-on) }}"}
    assert bisect["runs-on"] == ["self-hosted", "linux", "gpu", "${{ matrix.gpu }}"]
    assert bisect["permissions"] == {"contents": "read"}
    checkout = bisect["steps"][0]
    assert checkout["with"] == {"persist-credentials": False, "fetch-depth": 0}  # the commits to bisect
    setup = next(s for s in bisect["steps"] if s.get("uses", "").endswith("gpu-setup"))
    assert "save-cache" not in setup["with"]  # only the measuring job saves the wheel
    run = next(s for s in bisect["steps"] if s.get("name") == "Bisect each new slowdown of this GPU kind")
    assert run["env"]["GPU"] == "${{ matrix.gpu }}"
    assert 'perfbot history bisect-steps --steps "$STEPS/steps.json" --runner "$GPU" --out-dir out/bisect' in run["run"]
    upload = next(s for s in bisect["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["with"]["name"] == "perfbot-bisect-${{ matrix.gpu }}" and upload["if"] == "always()"
    assert upload["with"]["path"] == "out/bisect/"

    assert issues["needs"] == ["store", "pages", "bisect", "declared"] and issues["runs-on"] == "ubuntu-latest"
    assert issues["if"] == (
        "!cancelled() && needs.store.outputs.failing != '' && needs.store.outputs.failing != '0'"
        " && needs.store.outputs.steps-artifact != ''"
    )
    assert issues["permissions"] == {"contents": "read", "issues": "write"}
    download = [s for s in issues["steps"] if s.get("uses", "").startswith("actions/download-artifact@")]
    assert [d["with"].get("artifact-ids") or d["with"]["pattern"] for d in download] == [
        "${{ needs.store.outputs.steps-artifact }}",
        "perfbot-bisect-*",
    ]
    post = issues["steps"][-1]
    assert post["env"]["OUTCOMES"] == download[1]["with"]["path"] and "merge-multiple" not in download[1]["with"]
    assert ".venv/bin/perfbot history open-issues" in post["run"] and '--repo "$GITHUB_REPOSITORY"' in post["run"]
    # No other job anywhere may write issues.
    writers = [
        (path.name, name)
        for path in WORKFLOWS
        for name, job in _load(path)["jobs"].items()
        if job.get("permissions", {}).get("issues") == "write"
    ]
    assert writers == [("baseline.yml", "issues")]
    text = (ROOT / ".github" / "workflows" / "baseline.yml").read_text()
    uses = re.findall(r"uses: actions/download-artifact@[0-9a-f]{40} # (v\S+)", text)
    assert uses and all(version.startswith("v4.") for version in uses), uses  # each artifact in its folder


def _step_script(job: str, name: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """A step of baseline.yml, run as Actions runs it (bash -e), in `cwd`."""
    return subprocess.run(
        ["bash", "-e", "-c", _run_step("baseline.yml", job, name)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _outputs(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines())


@pytest.mark.parametrize("reproduces", [True, False], ids=["culprit", "not-reproduced"])
@pytest.mark.slow
def test_a_new_slowdown_on_main_is_bisected_and_gets_one_issue_per_step(tmp_path: Path, reproduces: bool):
    """The store, bisect and issue jobs' own scripts, in turn, as Actions runs them: a generated
    repository whose commit 24 makes the fused kernel 3% slower (or, where the step does not
    reproduce, no commit does), a store that measured every commit, and the loopback GitHub.
    Only `perfbot sample` (the GPU) is faked. A re-run of the bisect job replaces its reports and
    resumes its states; a re-run of the issue job opens nothing more."""
    from perfbot.history import steps_file
    from perfbot.jobs import bisect_outcome
    from perfbot.records import results
    from tests import step_repo
    from tests.fake_github import FakeGitHub

    repo = tmp_path / "repo"  # the checkout the bisect job works in: main, with its history
    shas = step_repo.repository(repo, [1.0] * 24 + [1.03 if reproduces else 1.0] * 16)
    runs = step_repo.measured(shas, 0.03, 24)
    remote = _baselines_branch(tmp_path, runs[:-1])
    (tmp_path / "runs" / "perfbot-baseline-h200").mkdir(parents=True)
    results.save(runs[-1], tmp_path / "runs" / "perfbot-baseline-h200" / "main.json")
    step_repo.shim(repo / ".venv" / "bin")  # what gpu-setup and install.sh would have installed
    base = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PERFBOT_SHIM_LOG": str(tmp_path / "shim.log")}
    steps = tmp_path / "steps"

    # The store job: stores the run, fails on the new slowdown, hands on the steps.
    stored = _step_script(
        "store",
        "Store on perfbot-baselines, check the history, rebuild the site",
        ROOT,
        {
            **base,
            "PYTHONPATH": str(ROOT),
            "PERFBOT": str(BIN / "perfbot"),
            "PERFBOT_BASELINE_REMOTE": str(remote),
            "GITHUB_SHA": shas[-1],
            "RUNS": str(tmp_path / "runs"),
            "STEPS": str(steps),
            "GITHUB_OUTPUT": str(tmp_path / "store.out"),
        },
    )
    assert stored.returncode == 0 and "stored on perfbot-baselines" in stored.stdout, stored.stdout + stored.stderr
    outputs = _outputs(tmp_path / "store.out")
    records = steps_file.load(steps / "steps.json").steps
    assert outputs == {"rc": "1", "bisect-on": '["h200"]', "failing": "2"} and len(records) == 2
    assert all(r.fails and r.runner == "h200" and r.good.commit in shas for r in records)

    # The bisect job, on the h200 runner, in the checkout.
    status = step_repo._git(repo, "status", "--porcelain")
    bisect_job = {**base, "GPU": "h200", "STEPS": str(steps)}
    bisected = _step_script("bisect", "Bisect each new slowdown of this GPU kind", repo, bisect_job)
    assert bisected.returncode == 0, bisected.stdout + bisected.stderr
    ran = [argv for argv in step_repo.calls(tmp_path / "shim.log") if argv[0] == "bisect"]
    out = repo / "out" / "bisect"
    for record, argv in zip(records, ran, strict=True):  # each step's command, as the check printed it
        assert ["perfbot", *argv] == [
            *record.bisect,
            *("--out-json", f"out/bisect/{record.id}.json", "--out-markdown", f"out/bisect/{record.id}.md"),
            *("--overwrite", "--state", f"out/bisect/{record.id}.state.json"),
        ]
        outcome = bisect_outcome.load(out / f"{record.id}.json")
        assert (outcome.good, outcome.bad) == (record.good.commit, record.bad.commit)
        if reproduces:
            assert (out / f"{record.id}.md").is_file() and (out / f"{record.id}.state.json").is_file()
            assert (outcome.result, outcome.first_bad) == ("culprit", shas[24])
            assert f"step {record.id} ({record.label} on NVIDIA H200): culprit {shas[24]}" in bisected.stdout
        else:
            assert outcome.result == "not-reproduced" and outcome.first_bad is None
    assert reproduces or bisected.stdout.count(": not reproduced: bad ") == 2, bisected.stdout
    # The GPU measured commits of the steps' range only, each in a worktree; the clone is left as
    # it was, but for the job's out/.
    sampled = {line.split()[1] for line in (tmp_path / "shim.log").read_text().splitlines()}
    good, bad = records[0].good.run - 1, records[0].bad.run - 1
    assert shas[good] in sampled and sampled <= set(shas[good : bad + 1]) and (shas[24] in sampled or not reproduces)
    assert step_repo._git(repo, "status", "--porcelain") == "\n".join(sorted([*status.splitlines(), "?? out/"]))
    if reproduces:  # a re-run of the job over its own folder: the reports are replaced, the states resumed
        again = _step_script("bisect", "Bisect each new slowdown of this GPU kind", repo, bisect_job)
        assert again.returncode == 0 and again.stdout.count(f"culprit {shas[24]}") == 2, again.stdout
    outcomes = tmp_path / "downloaded"
    shutil.copytree(repo / "out" / "bisect", outcomes / "perfbot-bisect-h200")  # as download-artifact lays it out

    # The issue job, twice (a re-run), against the loopback GitHub.
    token = "ghs_issuesJOBtoken"
    with FakeGitHub(token=token) as fake:
        from perfbot.records import declared

        bench = records[0].benchmark  # what the declared job would have read from main's suites
        env = {
            **base,
            "GITHUB_TOKEN": token,
            "GITHUB_API_URL": fake.url,
            "GITHUB_REPOSITORY": "octo/perfbot",
            "RUNNER_TEMP": str(tmp_path),
            "STEPS": str(steps),
            "OUTCOMES": str(outcomes),
            "DECLARED": declared.to_text([(bench.suite, [bench.kernel], sorted({r.benchmark.case for r in records}))]),
            "MAX_ISSUES": "",
            "RUN_URL": "https://github.com/octo/perfbot/actions/runs/7",
        }
        _base_scripts(repo)  # the issue job's checkout of main
        first = _step_script("issues", "Open the issues", repo, env)
        again = _step_script("issues", "Open the issues", repo, env)
        issues = fake.issues.get("octo/perfbot", [])
        requests = list(fake.requests)
    assert first.returncode == 0 and again.returncode == 0, first.stdout + first.stderr + again.stderr
    if not reproduces:
        assert issues == [] and requests == []
        assert first.stdout.count("the bisect did not reproduce it") == 2
        return
    assert len(issues) == 2 and again.stdout.count("exists, not opened again") == 2
    for record, issue in zip(records, issues, strict=True):
        assert f"**Culprit:** `{shas[24][:12]}` change 24 — the first bad commit `{shas[24]}`" in issue["body"]
        assert issue["body"].rstrip().endswith(f"<!-- perfbot-step: {record.id} -->")
        assert "actions/runs/7" in issue["body"] and token not in first.stdout + first.stderr


SHA40 = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("source", "accepted"),
    [
        (None, True),  # unset: this checkout, which is perfbot
        ("", True),
        (".", True),
        (f"git+https://github.com/octo/perfbot@{SHA40}", True),
        (f"git+https://github.com/my-org-2/perf.bot_fork-1@{SHA40}", True),
        (f"git+https://github.com/{'a' * 39}/perfbot@{SHA40}", True),
        (f"git+https://github.com/octo/{'r' * 100}@{SHA40}", True),
        (f"git+https://github.com/{'a' * 40}/perfbot@{SHA40}", False),  # no such owner
        (f"git+https://github.com/octo/{'r' * 101}@{SHA40}", False),
        ("git+https://github.com/octo/perfbot@main", False),
        (f"git+https://github.com/octo/perfbot@main#x=@{SHA40}", False),
        (f"git+https://github.com/octo/perfbot@{SHA40}#egg=perfbot", False),
        (f"git+https://github.com/octo/perfbot@{SHA40}?x=1", False),
        (f"https://evil.example/perfbot.tar.gz#@{SHA40}", False),
        (f"https://github.com/octo/perfbot/archive/{SHA40}.tar.gz", False),
        (f"file:///tmp/perfbot@{SHA40}", False),
        ("file:///tmp/perfbot-0.1.0-py3-none-any.whl", False),
        (f"git+ssh://git@github.com/octo/perfbot@{SHA40}", False),
        (f"git+http://github.com/octo/perfbot@{SHA40}", False),
        (f"git+https://github.com.evil.example/octo/perfbot@{SHA40}", False),
        (f"git+https://evil.example/github.com/octo/perfbot@{SHA40}", False),
        (f"git+https://user@github.com/octo/perfbot@{SHA40}", False),
        (f"git+https://github.com:443/octo/perfbot@{SHA40}", False),
        (f"git+https://github.com/octo/perfbot/sub@{SHA40}", False),
        (f"git+https://github.com/octo/..@{SHA40}", False),
        (f"git+https://github.com/octo/.@{SHA40}", False),
        (f"git+https://github.com/-octo/perfbot@{SHA40}", False),
        (f"git+https://github.com/octo-/perfbot@{SHA40}", False),
        (f"git+https://github.com/oc--to/perfbot@{SHA40}", False),
        (f"git+https://github.com/octo/perfbot@{SHA40.upper()}", False),
        (f"git+https://github.com/octo/perfbot@{SHA40[:39]}", False),
        (f"git+https://github.com/octo/perfbot@{SHA40}0", False),
        (f"git+https://github.com/octo/perfbot@{SHA40}\n", False),
        (f"git+https://github.com/octo/perfbot@{SHA40} ", False),
        (f" git+https://github.com/octo/perfbot@{SHA40}", False),
        (f"git+https://github.com/octo/perfbot@{SHA40}\n::warning::injected", False),
        (f"perfbot @ git+https://github.com/octo/perfbot@{SHA40}", False),
        (f"GIT+HTTPS://GITHUB.COM/octo/perfbot@{SHA40}", False),
        ("./perfbot", False),
    ],
)
def test_install_takes_perfbot_only_from_a_github_repository_at_a_full_commit(source, accepted, tmp_path: Path):
    """install.sh check: the validation alone, which core and gpu run first (nothing installed)."""
    env = {k: v for k, v in os.environ.items() if k != "PERFBOT_SOURCE"}
    if source is not None:
        env["PERFBOT_SOURCE"] = source
    done = subprocess.run(
        ["bash", str(ROOT / ".github" / "perfbot" / "install.sh"), "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == (0 if accepted else 2), done.stdout + done.stderr
    if not accepted:
        assert done.stderr.startswith("::error::PERFBOT_SOURCE must be perfbot pinned to a full commit, exactly")
        assert (source or ".") not in done.stderr  # never echoed: no workflow commands
        # core and gpu refuse it the same way, before making anything
        project = tmp_path / "project"
        project.mkdir()
        for kind in ("core", "gpu"):
            refused = subprocess.run(
                ["bash", str(ROOT / ".github" / "perfbot" / "install.sh"), kind],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
            )
            assert refused.returncode == 2 and refused.stderr == done.stderr
        assert list(project.iterdir()) == []


def test_codeowners_cover_what_runs_on_the_gpu_and_what_judges():
    """.github/CODEOWNERS: every line a pattern and the maintainers' team, the patterns exactly
    the workflows and their scripts, perfbot, the thresholds, pyproject.toml and the subject;
    each names something that exists, and SECURITY.md says so and how to set the team."""
    import tomllib

    owners = {}
    for line in (ROOT / ".github" / "CODEOWNERS").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            pattern, *team = line.split()
            owners[pattern] = team
    subject = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["perfbot"]["kernels"]
    covered = {"/.github/", "/perfbot/", "/thresholds.yaml", "/pyproject.toml", f"/{subject}/"}
    assert set(owners) == covered and all(team == ["@OWNER/perfbot-maintainers"] for team in owners.values())
    assert all((ROOT / pattern.strip("/")).exists() for pattern in owners)
    security = (ROOT / "SECURITY.md").read_text()
    assert "`.github/CODEOWNERS`" in security and "`@OWNER/perfbot-maintainers`" in security
    for pattern in covered:
        assert f"`{pattern.lstrip('/')}`" in security, pattern


def _maintainer(fake, tmp_path: Path, *args: str, token: str | None = None) -> tuple[subprocess.CompletedProcess, str]:
    """maintainer.sh against the loopback GitHub, with a curl that logs its arguments first."""
    shims = tmp_path / "shims"
    shims.mkdir(exist_ok=True)
    real_curl = shutil.which("curl")
    (shims / "curl").write_text(f'#!/bin/sh\nprintf "%s\\n" "curl $*" >> {tmp_path}/argv.log\nexec {real_curl} "$@"\n')
    (shims / "curl").chmod(0o755)
    output = tmp_path / "output"
    output.write_text("")
    done = subprocess.run(
        ["bash", str(ROOT / ".github" / "perfbot" / "maintainer.sh"), *args],
        env={
            "PATH": f"{shims}:{os.environ['PATH']}",
            "GITHUB_TOKEN": token or fake.token,
            "GITHUB_API_URL": fake.url,
            "GITHUB_REPOSITORY": "octo/perfbot",
            "GITHUB_OUTPUT": str(output),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, output.read_text()


@pytest.mark.parametrize(
    ("logins", "maintainer"),
    [
        (["alice"], True),  # maintain
        (["carol"], True),  # admin
        (["bob"], False),  # write: may dispatch, is no maintainer
        (["trish"], False),  # triage
        (["stranger"], False),  # no collaborator
        (["github-actions[bot]"], False),
        (["perfbot-app[bot]"], False),
        (["dependabot[bot]"], False),
        (["alice", "carol"], True),
        (["alice", "bob"], False),  # a maintainer's run re-run by a writer
        (["github-actions[bot]", "alice"], False),  # a workflow's run re-run by a maintainer
        (["alice\n::warning::x"], False),
        (["../alice"], False),
        ([""], False),
    ],
)
def test_a_maintainer_is_admin_or_maintain(logins: list[str], maintainer: bool, tmp_path: Path):
    from tests.fake_github import FakeGitHub

    with FakeGitHub(token="ghs_maintainerTOKEN") as fake:
        for login, role in (("alice", "maintain"), ("carol", "admin"), ("bob", "write"), ("trish", "triage")):
            fake.add_collaborator("octo/perfbot", login, role)
        done, output = _maintainer(fake, tmp_path, *logins)
        asked = [r.path for r in fake.requests]
        assert done.returncode == 0, done.stdout + done.stderr
        assert output == f"maintainer={'true' if maintainer else 'false'}\n"
        required, _ = _maintainer(fake, tmp_path, "--require", *logins)
    # Only users' logins are asked about (a bot, or anything else, is not one), and the token
    # is on no command line.
    users = [login for login in logins if re.fullmatch(r"[A-Za-z0-9]+(-[A-Za-z0-9]+)*", login)]
    assert asked == [f"/repos/octo/perfbot/collaborators/{login}/permission" for login in users]
    if users:
        assert "curl " in (tmp_path / "argv.log").read_text()
        assert "ghs_maintainerTOKEN" not in (tmp_path / "argv.log").read_text()
    assert "::warning::x" not in done.stdout + done.stderr
    assert required.returncode == (0 if maintainer else 2), required.stdout + required.stderr
    if not maintainer:
        assert "::error::only a maintainer of this repository" in required.stderr


@pytest.mark.slow
def test_a_maintainer_check_that_github_cannot_answer_fails(tmp_path: Path):
    from tests.fake_github import FakeGitHub

    with FakeGitHub(token="ghs_maintainerTOKEN") as fake:
        fake.add_collaborator("octo/perfbot", "alice", "maintain")
        fake.fail_next(500, count=4)  # the first try and curl's three retries
        failed, output = _maintainer(fake, tmp_path, "alice")
        refused, _ = _maintainer(fake, tmp_path, "alice", token="ghs_wrongTOKEN")  # 401
        answered, _ = _maintainer(fake, tmp_path, "alice")
    assert failed.returncode == 3 and "could not read the permission of alice" in failed.stderr and output == ""
    assert refused.returncode == 3 and answered.returncode == 0


def _verify_step(fake, tmp_path: Path, by_a_maintainer: str, sha: str) -> subprocess.CompletedProcess:
    """The check job's verify step, as Actions runs it, with this checkout's perfbot as .venv's."""
    return subprocess.run(
        ["bash", "-e", "-c", _run_step("gpu-check.yml", "check", "Check that the commit is the pull request's head")],
        cwd=_job_checkout(tmp_path / "work"),
        env={
            "PATH": os.environ["PATH"],
            "PYTHONPATH": str(ROOT),
            "HOME": str(tmp_path),
            "GITHUB_TOKEN": fake.token,
            "GITHUB_API_URL": fake.url,
            "GITHUB_REPOSITORY": "octo/perfbot",
            "PR_NUMBER": "7",
            "HEAD_SHA": sha,
            "BY_A_MAINTAINER": by_a_maintainer,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("actor", "fork", "measured"),
    [
        ("github-actions[bot]", False, True),  # gpu-request.yml, a branch of this repository
        ("github-actions[bot]", True, False),  # a fork's head dispatched by a workflow; any re-run of it
        ("perfbot-app[bot]", True, False),
        ("bob", False, True),  # a writer, by hand, a branch of this repository
        ("bob", True, False),  # a writer is no maintainer: not a fork's head
        ("alice", True, True),  # a maintainer, by hand: the commit they read, on every re-run
        ("carol", True, True),
    ],
)
def test_a_forks_head_is_measured_only_in_a_run_a_maintainer_dispatched(
    actor: str, fork: bool, measured: bool, tmp_path: Path
):
    """The decide job's dispatcher step decides from github.actor (who dispatched the run, the same
    on every re-run), never from github.triggering_actor (who re-ran it); the check job's verify
    step then asks for a head of this repository's own branches unless a maintainer dispatched."""
    from tests.fake_github import FakeGitHub

    data = _load(ROOT / ".github" / "workflows" / "gpu-check.yml")
    decide, check = data["jobs"]["decide"], data["jobs"]["check"]
    dispatcher = next(s for s in decide["steps"] if s.get("id") == "dispatcher")
    assert dispatcher["env"]["ACTOR"] == "${{ github.actor }}"
    assert dispatcher["run"] == '.github/perfbot/maintainer.sh "$ACTOR"'
    assert decide["outputs"]["by-a-maintainer"] == "${{ steps.dispatcher.outputs.maintainer }}"
    verify = next(s for s in check["steps"] if s.get("name") == "Check that the commit is the pull request's head")
    assert verify["env"]["BY_A_MAINTAINER"] == "${{ needs.decide.outputs.by-a-maintainer }}"
    assert "triggering_actor" not in "".join(f"{k}{v}" for s in check["steps"] for k, v in s.get("env", {}).items())
    assert "triggering_actor" not in json.dumps(decide)

    with FakeGitHub(token="ghs_checkTOKEN") as fake:
        _pull_7(fake, fork)
        done, output = _maintainer(fake, tmp_path, actor)
        assert done.returncode == 0, done.stdout + done.stderr
        verified = _verify_step(fake, tmp_path, output.strip().removeprefix("maintainer="), PR_7_HEAD)
    assert verified.returncode == (0 if measured else 2), verified.stdout + verified.stderr


PR_7_HEAD = "c" * 40


def _pull_7(fake, fork: bool) -> None:
    """PR 7 of octo/perfbot, its head PR_7_HEAD on a fork or a branch, and who may do what there."""
    fake.add_collaborator("octo/perfbot", "alice", "maintain")
    fake.add_collaborator("octo/perfbot", "carol", "admin")
    fake.add_collaborator("octo/perfbot", "bob", "write")
    fake.add_pull("octo/perfbot", 7, PR_7_HEAD, head_repo="mallory/perfbot" if fork else None)


# Whoever dispatched, the same: one run per kind of head (not one per dispatcher, above).
@pytest.mark.parametrize("fork", [False, True])
def test_a_verify_step_not_told_of_a_maintainer_asks_for_a_branch_of_this_repository(fork: bool, tmp_path: Path):
    """Whatever the dispatcher step said, anything but "true" asks for a branch of this repository."""
    from tests.fake_github import FakeGitHub

    with FakeGitHub(token="ghs_checkTOKEN") as fake:
        _pull_7(fake, fork)
        unsure = _verify_step(fake, tmp_path, "", PR_7_HEAD)
    assert unsure.returncode == (2 if fork else 0), unsure.stdout + unsure.stderr


def test_bisect_waits_for_a_maintainer_and_checked_inputs_on_a_github_hosted_runner():
    """No GPU runner is asked for before the allowed job has passed: it runs on GitHub's
    runners, requires the dispatcher and the re-runner to be maintainers, and checks the inputs;
    the GPU job runs on the label it checked, for at most six hours."""
    data = _load(ROOT / ".github" / "workflows" / "bisect.yml")
    allowed, bisect = data["jobs"]["allowed"], data["jobs"]["bisect"]
    assert set(data["jobs"]) == {"allowed", "bisect"}
    assert allowed["runs-on"] == "ubuntu-latest" and allowed["permissions"] == {"contents": "read"}
    assert [s.get("run") for s in allowed["steps"][1:3]] == [
        ".github/perfbot/codeowners.sh",
        ".github/perfbot/install.sh verify",
    ]
    gate = allowed["steps"][3]
    assert gate["run"] == '.github/perfbot/maintainer.sh --require "$ACTOR" "$TRIGGERING_ACTOR"'
    assert gate["env"]["ACTOR"] == "${{ github.actor }}"
    assert gate["env"]["TRIGGERING_ACTOR"] == "${{ github.triggering_actor }}"
    assert [s.get("id") for s in allowed["steps"][4:]] == ["labels", "inputs"]
    assert allowed["outputs"] == {"gpu": "${{ steps.inputs.outputs.gpu }}"}
    assert bisect["needs"] == "allowed" and "if" not in bisect
    assert bisect["runs-on"] == ["self-hosted", "linux", "gpu", "${{ needs.allowed.outputs.gpu }}"]
    assert bisect["timeout-minutes"] <= 360
    assert bisect["concurrency"] == {"group": "bisect-triton", "cancel-in-progress": False}
    assert "inputs.gpu" not in json.dumps(bisect)  # only the checked label names a runner


def _bisect_inputs(tmp_path: Path, good: str, bad: str, name: str, gpu: str, labels: str | None):
    output = tmp_path / "labels.out"
    output.write_text("")
    env = {"PATH": os.environ["PATH"], "GITHUB_OUTPUT": str(output)}
    if labels is not None:
        env["PERFBOT_GPU_LABELS"] = labels
    subprocess.run(["bash", str(ROOT / ".github" / "perfbot" / "gpu-labels.sh")], env=env, check=True)
    checked = _outputs(output)["labels"]
    output.write_text("")
    steps = _load(ROOT / ".github" / "workflows" / "bisect.yml")["jobs"]["allowed"]["steps"]
    script = next(s for s in steps if s.get("id") == "inputs")["run"]
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        env={**env, "GOOD": good, "BAD": bad, "BENCHMARK": name, "GPU": gpu, "LABELS": checked},
        capture_output=True,
        text=True,
    )
    return done, output.read_text()


@pytest.mark.parametrize(
    ("good", "bad", "name", "gpu", "outcome"),
    [
        ("v3.5.0", "v3.6.0", "pr/gemma-2b/fused", "", "a100"),  # the first label
        ("a" * 40, "b" * 40, "pr/gemma-2b/fused", "h200", "h200"),
        ("release/3.6.x", "main", "pr/gemma-2b/fused", "a100", "a100"),
        ("v3.5.0", "v3.6.0", "pr/gemma-2b/fused", "b200", None),  # not a listed GPU
        ("v3.5.0", "v3.6.0", "pr/gemma-2b/fused", "a100 h200", None),
        ("v3.5.0", "v3.6.0", "pr/gemma-2b/fused", '"a100"', None),
        ("v3.5.0..v3.6.0", "v3.6.0", "pr/gemma-2b/fused", "", None),
        ("-v", "v3.6.0", "pr/gemma-2b/fused", "", None),
        ("v3.5.0", "main@{1}", "pr/gemma-2b/fused", "", None),
        ("v3.5.0", "main/", "pr/gemma-2b/fused", "", None),
        ("v3.5.0", "x" * 101, "pr/gemma-2b/fused", "", None),
        ("v3.5.0", "v3.6.0\n", "pr/gemma-2b/fused", "", None),
        ("v3.5.0", "v3.6.0", "pr/gemma-2b", "", None),
        ("v3.5.0", "v3.6.0", "pr/gemma-2b/fused/x", "", None),
        ("v3.5.0", "v3.6.0", "pr/t5-v1.1-xl/fused/backward", "", "a100"),  # a backward row
        ("v3.5.0", "v3.6.0", "pr/t5-v1.1-xl/fused/forward+backward", "", "a100"),
        ("v3.5.0", "v3.6.0", "pr/t5-v1.1-xl/fused/backwards", "", None),
        ("v3.5.0", "v3.6.0", "pr/t5-v1.1-xl/fused/backward/x", "", None),
        ("v3.5.0", "v3.6.0", "pr/t5-v1.1-xl/fused/forwardXbackward", "", None),
        ("v3.5.0", "v3.6.0", "pr/gemma 2b/fused", "", None),
    ],
)
def test_bisects_inputs_are_checked_before_a_gpu_runner_is_asked_for(
    good: str, bad: str, name: str, gpu: str, outcome: str | None, tmp_path: Path
):
    """name: SUITE/CASE/KERNEL (pytest-benchmark owns the argument name `benchmark`)."""
    done, output = _bisect_inputs(tmp_path, good, bad, name, gpu, '["a100", "h200"]')
    if outcome is None:
        assert done.returncode == 2 and "::error::" in done.stderr and output == "", done.stdout + done.stderr
    else:
        assert done.returncode == 0 and output == f"gpu={outcome}\n", done.stdout + done.stderr


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("pr/gemma-2b/fused", ["--suite", "pr", "--case", "gemma-2b", "--kernel", "fused", "--mode", "forward"]),
        (
            "pr/t5-v1.1-xl/fused/backward",
            ["--suite", "pr", "--case", "t5-v1.1-xl", "--kernel", "fused", "--mode", "backward"],
        ),
    ],
)
def test_the_bisect_job_bisects_the_named_benchmark_in_its_mode(name: str, expected: list[str], tmp_path: Path):
    """The Bisect step, run with a stand-in perfbot that writes down its arguments."""
    steps = _load(ROOT / ".github" / "workflows" / "bisect.yml")["jobs"]["bisect"]["steps"]
    script = next(s for s in steps if s.get("name") == "Bisect")["run"]
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    perfbot = tmp_path / ".venv" / "bin" / "perfbot"
    perfbot.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > args.txt\n')
    perfbot.chmod(0o755)
    env = {"PATH": os.environ["PATH"], "GOOD": "v3.5.0", "BAD": "v3.6.0", "BENCHMARK": name, "XDG_CACHE_HOME": "/c"}
    subprocess.run(["bash", "-e", "-c", script], env=env, cwd=tmp_path, check=True)
    args = (tmp_path / "args.txt").read_text().splitlines()
    at = args.index("--suite")
    assert args[at : at + len(expected)] == expected, args


def test_the_history_site_is_deployed_to_pages_by_one_job_under_the_github_pages_environment():
    """The store job uploads the site it built as the Pages artifact; the pages job, on a
    GitHub-hosted runner, alone holds pages: write and id-token: write, in the environment
    github-pages (limited to main in the repository's settings); no workflow pushes a branch
    for the site."""
    data = _load(ROOT / ".github" / "workflows" / "baseline.yml")
    store, pages = data["jobs"]["store"], data["jobs"]["pages"]
    assert store["permissions"] == {"contents": "write"}
    assert store["outputs"]["site-artifact"] == "${{ steps.site.outputs.artifact_id }}"
    step = next(s for s in store["steps"] if s.get("id") == "store")
    assert step["env"]["PERFBOT_SITE_DIR"] == "${{ runner.temp }}/perfbot/site"
    names = [s.get("name") for s in store["steps"]]
    upload = store["steps"][names.index("Upload the history site")]
    assert (
        upload["uses"].startswith("actions/upload-pages-artifact@")
        and upload["if"] == "steps.store.outputs.site == 'true'"
    )
    assert upload["with"] == {"path": step["env"]["PERFBOT_SITE_DIR"]}
    assert names.index("Upload the history site") < names.index(
        "Fail on a new slowdown"
    )  # a failing check still publishes

    assert pages["needs"] == "store" and pages["runs-on"] == "ubuntu-latest"
    # Only the artifact the store job uploaded itself: a GPU job of the run that took its name first
    # makes that upload fail, and then nothing is deployed.
    assert upload["id"] == "site" and pages["if"] == "!cancelled() && needs.store.outputs.site-artifact != ''"
    assert pages["environment"] == {"name": "github-pages", "url": "${{ steps.deploy.outputs.page_url }}"}
    assert pages["permissions"] == {"pages": "write", "id-token": "write"}
    # Deployed by the id the store job's upload returned, never looked up by name (deploy-pages).
    (deploy,) = pages["steps"]
    assert "uses" not in deploy and deploy["id"] == "deploy"
    assert deploy["env"]["ARTIFACT_ID"] == "${{ needs.store.outputs.site-artifact }}"
    for path in WORKFLOWS:
        for name, job in _load(path)["jobs"].items():
            if {"pages", "id-token"} & set(job.get("permissions", {})):
                assert (path.name, name) == ("baseline.yml", "pages")
    scripts = [p.read_text() for p in (ROOT / ".github").rglob("*") if p.is_file()]
    assert not any("perfbot-site" in text for text in scripts)


def test_the_comment_job_posts_as_the_github_app_where_one_is_set():
    """With the variable PERFBOT_APP_CLIENT_ID, the comment job mints the App's token (its key a
    secret of the environment perfbot-post, which the settings limit to main), scoped to the
    comment and the status, and posts with it; without, it posts with the job's own token."""
    data = _load(ROOT / ".github" / "workflows" / "gpu-check.yml")
    comment = data["jobs"]["comment"]
    assert comment["environment"] == "perfbot-post"
    app = next(s for s in comment["steps"] if s.get("id") == "app")
    assert app["if"] == "vars.PERFBOT_APP_CLIENT_ID != ''"
    assert app["uses"].startswith("actions/create-github-app-token@")
    assert app["with"] == {
        "client-id": "${{ vars.PERFBOT_APP_CLIENT_ID }}",
        "private-key": "${{ secrets.PERFBOT_APP_PRIVATE_KEY }}",
        "permission-pull-requests": "write",
        "permission-statuses": "write",
    }
    post = comment["steps"][-1]
    assert post["env"]["GITHUB_TOKEN"] == "${{ steps.app.outputs.token || github.token }}"
    assert post["env"]["APP_SLUG"] == "${{ steps.app.outputs.app-slug }}"
    # The App's key is read in that one step, of that one job, and nowhere else.
    for path in WORKFLOWS:
        for name, job in _load(path)["jobs"].items():
            for step in job.get("steps", []):
                if "secrets." in json.dumps(step):
                    assert (path.name, name, step.get("id")) == ("gpu-check.yml", "comment", "app")


def test_the_post_step_edits_the_apps_own_comment(tmp_path: Path):
    """An App's token cannot read GET /user: the post step names the App's login (APP_SLUG[bot]),
    so a second report edits the App's comment instead of adding one; the status is the App's."""
    from perfbot.deciding import comparison
    from perfbot.deciding.compare import compare
    from perfbot.deciding.thresholds import load_policy
    from tests.fake_github import FakeGitHub, Identity

    reports = tmp_path / "reports" / "perfbot-report-a100"
    reports.mkdir(parents=True)
    summary = comparison.summarize(
        compare(make_results(seed=1), make_results(seed=2), load_policy(ROOT / "thresholds.yaml"))
    )
    (reports / "comparison.json").write_text(comparison.to_text(summary))
    sha, token = "d" * 40, "ghs_appINSTALLATIONtoken"
    app = Identity("perfbot-app[bot]", "Bot", reads_user=False)
    with FakeGitHub(token=token, identity=app) as fake:
        fake.add_pull("octo/perfbot", 7, sha)
        fake.add_comment(
            "octo/perfbot", 7, "an old report\n<!-- perfbot-report -->", login="github-actions[bot]", user_type="Bot"
        )
        for run in (1, 2):
            done = _post_step(tmp_path, fake.url, token, sha, '["a100"]', tmp_path / "reports", run, "perfbot-app")
            assert done.returncode == 0, done.stdout + done.stderr
        posted = [c for c in fake.comments[("octo/perfbot", 7)] if c["user"]["login"] == "perfbot-app[bot]"]
        statuses = fake.statuses[("octo/perfbot", sha)]
    assert len(posted) == 1 and posted[0]["body"].rstrip().endswith("<!-- perfbot-report -->")
    assert {s["creator"]["login"] for s in statuses} == {"perfbot-app[bot]"}


def test_each_job_installs_the_extra_its_commands_use():
    """The GPU runner gets the measuring extra alone (verify-head reads GitHub with the standard
    library); the GitHub-hosted jobs that post get github3.py through the github extra."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert not any(r.startswith("github3") for r in project["dependencies"] + extras["gpu"])
    assert extras["github"] == ["github3.py>=4"] and extras["test"][0] == "perfbot[gpu,github]"
    install = (ROOT / ".github" / "perfbot" / "install.sh").read_text()
    assert re.findall(r'(?m)^  (core|gpu)\) extra="([^"]*)" ;;(?:  #.*)?$', install) == [
        ("core", "[github]"),
        ("gpu", "[gpu]"),
    ]
    uses = {}
    for workflow in (ROOT / ".github" / "workflows").glob("*.yml"):
        for name, job in _load(workflow)["jobs"].items():
            steps = job.get("steps", [])
            kinds = {kind for s in steps for kind in re.findall(r"install\.sh (core|gpu)", s.get("run", ""))}
            kinds |= {"gpu" for s in steps if "gpu-setup" in s.get("uses", "")}
            posts = any(re.search(r"perfbot (comment|history open-issues)", s.get("run", "")) for s in steps)
            uses[f"{workflow.name}:{name}"] = (kinds, posts)
    posting = {job for job, (_, posts) in uses.items() if posts}
    assert posting and all(uses[job][0] == {"core"} for job in posting), uses
    assert uses["gpu-check.yml:check"][0] == {"gpu"}


LOCK = ROOT / ".github" / "perfbot" / "requirements-core.txt"


def _locked() -> dict[str, tuple[str, list[str]]]:
    """The lock's requirements: normalized name -> (version, its sha256 hashes)."""
    locked: dict[str, tuple[str, list[str]]] = {}
    text = LOCK.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, *options = line.split()
        name, version = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)", requirement).groups()  # a pin, nothing else
        hashes = [o.removeprefix("--hash=sha256:") for o in options]
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), line
        locked[re.sub(r"[-_.]+", "-", name).lower()] = (version, hashes)
    return locked


def test_the_lock_of_the_jobs_that_post_pins_every_core_dependency_by_hash():
    """requirements-core.txt: every line a pin with its hashes, covering every dependency of
    perfbot's core, its github extra and its build backend, each version allowed by
    pyproject.toml; made for the hosted runners' Python (3.11, setup-python)."""
    import tomllib

    from packaging.requirements import Requirement

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = [
        *pyproject["project"]["dependencies"],
        *pyproject["project"]["optional-dependencies"]["github"],
        *pyproject["build-system"]["requires"],
    ]
    locked = _locked()
    assert locked and all(hashes for _, hashes in locked.values())
    for text in needed:
        requirement = Requirement(text)
        name = re.sub(r"[-_.]+", "-", requirement.name).lower()
        assert name in locked, f"{text} is not in the lock"
        assert requirement.specifier.contains(locked[name][0], prereleases=True), (text, locked[name][0])
    assert "autogenerated by pip-compile with Python 3.11" in LOCK.read_text()


def test_the_jobs_that_hold_write_tokens_install_only_what_the_lock_pins():
    """A job with any write permission installs perfbot only through `install.sh core` and runs
    no pip of its own; install.sh core takes every distribution from the lock, hash-checked and
    wheels only, and then perfbot without its dependencies or a build environment of pip's."""
    install = (ROOT / ".github" / "perfbot" / "install.sh").read_text()
    core = install[install.index('if [ "$kind" = core ]; then\n  .venv') :]
    core = core[: core.index("\nfi\n")]
    pips = [line.strip() for line in core.splitlines() if "pip install" in line]
    assert pips == [
        '.venv/bin/pip install -q --require-hashes --only-binary :all: -r "$lock"',
        '.venv/bin/pip install -q --no-deps --no-build-isolation "$target"',
    ]
    assert 'lock="$(dirname "${BASH_SOURCE[0]}")/requirements-core.txt"' in install
    assert ".venv/bin/pip check" in core
    writers = []
    for workflow in WORKFLOWS:
        for name, job in _load(workflow)["jobs"].items():
            if "write" not in job.get("permissions", {}).values():
                continue
            writers.append(f"{workflow.name}:{name}")
            runs = [s.get("run", "") for s in job.get("steps", [])]
            assert not any(re.search(r"\bpip\b", run) for run in runs), f"{workflow.name}:{name}"
            installs = [run for run in runs if "install.sh" in run]
            assert all(run == ".github/perfbot/install.sh core" for run in installs), f"{workflow.name}:{name}"
            if installs:  # on the Python the lock was made for
                index = runs.index(installs[0])
                setup = [s for s in job["steps"][:index] if s.get("uses", "").startswith("actions/setup-python@")]
                assert setup and setup[-1]["with"] == {"python-version": "3.11"}, f"{workflow.name}:{name}"
    assert {"gpu-check.yml:comment", "baseline.yml:store", "baseline.yml:issues"} <= set(writers)


def test_install_core_refuses_to_run_without_its_lock(tmp_path: Path):
    project = tmp_path / "project"
    (project / ".github").mkdir(parents=True)
    shutil.copytree(ROOT / ".github" / "perfbot", project / ".github" / "perfbot")
    (project / ".github" / "perfbot" / "requirements-core.txt").unlink()
    shutil.copy(ROOT / "pyproject.toml", project / "pyproject.toml")
    done = subprocess.run(
        ["bash", ".github/perfbot/install.sh", "core"],
        cwd=project,
        env={k: v for k, v in os.environ.items() if k != "PERFBOT_SOURCE"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stderr.startswith("::error::no lock of perfbot's core")
    assert not (project / ".venv").exists()


def _pages_step(fake, tmp_path: Path, artifact_id: str, **env: str) -> tuple[subprocess.CompletedProcess, str]:
    """The pages job's deploy step, as Actions runs it, against the loopback GitHub, with a curl
    that logs its arguments first."""
    shims = tmp_path / "shims"
    shims.mkdir(exist_ok=True)
    (shims / "curl").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "curl $*" >> {tmp_path}/argv.log\nexec {shutil.which("curl")} "$@"\n'
    )
    (shims / "curl").chmod(0o755)
    output = tmp_path / "output"
    output.write_text("")
    step = _load(ROOT / ".github" / "workflows" / "baseline.yml")["jobs"]["pages"]["steps"][0]
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        env={
            "PATH": f"{shims}:{os.environ['PATH']}",
            "GITHUB_TOKEN": fake.token,
            "GITHUB_API_URL": fake.url,
            "GITHUB_REPOSITORY": "octo/perfbot",
            "GITHUB_SHA": "a" * 40,
            "GITHUB_OUTPUT": str(output),
            "ACTIONS_ID_TOKEN_REQUEST_URL": f"{fake.url}/_actions/id-token?api-version=2.0",
            "ACTIONS_ID_TOKEN_REQUEST_TOKEN": fake.oidc_request_token,
            "ARTIFACT_ID": artifact_id,
            "PERFBOT_PAGES_POLL_S": "0",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done, output.read_text()


def test_the_site_deployed_is_the_artifact_the_store_job_uploaded_by_its_id(tmp_path: Path):
    """The store job's upload gave artifact 101; a GPU job of the run also uploaded one named
    github-pages (202). The deploy step names 101 to GitHub Pages, with the run's OIDC token,
    waits for it to succeed, and keeps every token off the command line."""
    from tests.fake_github import FakeGitHub

    with FakeGitHub(token="ghs_pagesTOKEN") as fake:
        fake.add_artifact(101, "github-pages")
        fake.add_artifact(202, "github-pages")
        done, output = _pages_step(fake, tmp_path, "101")
        deployments = list(fake.pages_deployments)
    assert done.returncode == 0, done.stdout + done.stderr
    (deployment,) = deployments
    assert deployment["artifact_id"] == 101 and deployment["pages_build_version"] == "a" * 40
    assert deployment["polled"] == 2 and not deployment["cancelled"]
    assert output == "page_url=https://octo.github.io/perfbot/\n"
    assert "deployed: artifact 101" in done.stdout
    logged = (tmp_path / "argv.log").read_text()
    assert "curl " in logged and "ghs_pagesTOKEN" not in logged and "oidc-request-token" not in logged
    assert fake.oidc_token not in logged + done.stdout + done.stderr


@pytest.mark.parametrize(
    ("artifact_id", "statuses", "rc", "said"),
    [
        ("", None, 2, "the store job gave no artifact id of the site"),  # its upload failed: a name taken
        ("github-pages", None, 2, "the store job gave no artifact id of the site"),
        ("101 202", None, 2, "the store job gave no artifact id of the site"),
        ("303", None, 3, "GitHub Pages refused to deploy artifact 303 (HTTP 404)"),  # deleted by a GPU job
        ("101", ["deployment_in_progress", "deployment_failed"], 1, "did not deploy artifact 101: deployment_failed"),
        ("101", ["deployment_content_failed"], 1, "deployment_content_failed"),
        ("101", ["syncing_files"], 3, "did not finish deploying artifact 101 in time; cancelled"),
        ("101", ["not_found"], 3, "gave no status for deployment 1"),
    ],
)
def test_a_deploy_that_does_not_succeed_fails_the_pages_job(
    artifact_id: str, statuses: list[str] | None, rc: int, said: str, tmp_path: Path
):
    from tests.fake_github import FakeGitHub

    with FakeGitHub(token="ghs_pagesTOKEN") as fake:
        fake.add_artifact(101, "github-pages")
        if statuses:
            fake.pages_statuses = statuses
        timeout = "2" if statuses == ["syncing_files"] else "600"
        done, output = _pages_step(fake, tmp_path, artifact_id, PERFBOT_PAGES_TIMEOUT_S=timeout)
        deployments = list(fake.pages_deployments)
        asked = [r.path for r in fake.requests]
    said_lines = [line for line in (done.stdout + done.stderr).splitlines() if line.startswith("::error::")]
    assert done.returncode == rc and len(said_lines) == 1 and said in said_lines[0], done.stdout + done.stderr
    if rc == 2:
        assert asked == [] and output == ""
    assert all(d["artifact_id"] == 101 for d in deployments)
    assert [d["cancelled"] for d in deployments] == [statuses == ["syncing_files"]] * len(deployments)


def _baseline_needs(site: str, steps: str, failing: str = "2", bisect_on: str = '["h200"]', pages: str = "success"):
    from tests.actions import Contexts

    store = {
        "result": "failure",  # it fails on the new slowdown, after handing on its outputs
        "outputs": {"site-artifact": site, "steps-artifact": steps, "failing": failing, "bisect-on": bisect_on},
    }
    return Contexts(needs={"store": store, "pages": {"result": pages}, "bisect": {"result": "success"}})


@pytest.mark.parametrize(
    ("site", "steps", "pages", "runs"),
    [
        ("101", "77", "success", {"pages", "bisect", "issues"}),
        ("101", "77", "failure", {"pages", "bisect", "issues"}),  # no site: the slowdown is still bisected
        ("", "77", "skipped", {"bisect", "issues"}),  # no site built, or its upload failed
        ("101", "", "success", {"pages"}),  # the steps' upload failed: a GPU job took the name first
        ("", "", "skipped", set()),
    ],
)
def test_which_jobs_after_the_store_job_run(site: str, steps: str, pages: str, runs: set[str]):
    """Each runs only with the id of the artifact it needs from the store job's own upload: a
    download by ids with none would take every artifact of the run."""
    from tests.actions import job_runs

    jobs = _load(ROOT / ".github" / "workflows" / "baseline.yml")["jobs"]
    contexts = _baseline_needs(site, steps, pages=pages)
    assert {name for name in ("pages", "bisect", "issues") if job_runs(jobs[name], contexts)} == runs


def test_the_steps_reach_the_bisect_and_issue_jobs_by_id_and_the_gpu_waits_for_the_site():
    data = _load(ROOT / ".github" / "workflows" / "baseline.yml")
    jobs = data["jobs"]
    for name in ("bisect", "issues"):
        assert "pages" in jobs[name]["needs"], name
        download = next(s for s in jobs[name]["steps"] if s.get("name") == "Download the new steps")
        assert download["with"] == {
            "artifact-ids": "${{ needs.store.outputs.steps-artifact }}",
            "path": "${{ runner.temp }}/perfbot/steps",
        }
        # download-artifact 4.3 puts an artifact taken by id in a folder of its name
        assert download["uses"].endswith("# v4.3.0") or "d3f86a106a0bac45b974a628896c90dbdf5c8093" in download["uses"]
        reader = next(s for s in jobs[name]["steps"] if "STEPS" in s.get("env", {}))
        assert reader["env"]["STEPS"] == "${{ runner.temp }}/perfbot/steps/perfbot-steps"
    text = (ROOT / ".github" / "workflows" / "baseline.yml").read_text()
    assert "name: perfbot-steps\n          path: ${{ runner.temp }}/perfbot/steps\n" not in text  # never by name
    # No GPU job of the run starts before the pages job has finished: bisect is the only one after it.
    gpu_jobs = {n for n, j in jobs.items() if "self-hosted" in j["runs-on"]}
    assert gpu_jobs == {"measure", "bisect"} and "pages" in jobs["bisect"]["needs"]


def test_issues_are_opened_only_for_what_mains_suites_declare_read_apart_from_any_write_token():
    """The declared job loads main's subject (on the CPU, with PyTorch) in a job that holds no
    write token and hands `perfbot suites --json` on as its output; the issue job passes it to
    open-issues with the cap of the repository's variable, if set."""
    jobs = _load(ROOT / ".github" / "workflows" / "baseline.yml")["jobs"]
    declared, issues = jobs["declared"], jobs["issues"]
    assert declared["runs-on"] == "ubuntu-latest" and declared["permissions"] == {"contents": "read"}
    assert (
        declared["needs"] == "store"
        and declared["if"] == issues["if"].split(" && needs.store.outputs.steps-artifact")[0]
    )
    assert declared["outputs"] == {"declared": "${{ steps.declared.outputs.declared }}"}
    step = next(s for s in declared["steps"] if s.get("id") == "declared")
    assert (
        "$(.venv/bin/perfbot suites --json)" in step["run"]
        and 'echo "declared=$declared" >> "$GITHUB_OUTPUT"' in step["run"]
    )
    assert any(s.get("run") == ".github/perfbot/install.sh gpu" for s in declared["steps"])
    assert "declared" in issues["needs"]
    post = issues["steps"][-1]
    assert post["env"]["DECLARED"] == "${{ needs.declared.outputs.declared }}"
    assert post["env"]["MAX_ISSUES"] == "${{ vars.PERFBOT_MAX_ISSUES }}"
    assert '--declared "$RUNNER_TEMP/declared.json" "${most[@]}"' in post["run"]


@pytest.mark.parametrize("most", ["", "3"])
def test_the_issue_step_hands_on_the_declarations_and_the_cap(most: str, tmp_path: Path):
    """The issue step's own script, with a perfbot that records what it was asked."""
    work = _base_scripts(tmp_path / "work")
    (work / ".venv" / "bin").mkdir(parents=True)
    (work / ".venv" / "bin" / "perfbot").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/argv\ncp "$RUNNER_TEMP/declared.json" {tmp_path}/seen\n'
    )
    (work / ".venv" / "bin" / "perfbot").chmod(0o755)
    said = '{"format":1,"suites":{"pr":{"implementations":["fused"],"cases":["x"]}}}'
    done = _step_script(
        "issues",
        "Open the issues",
        work,
        {
            "PATH": os.environ["PATH"],
            "RUNNER_TEMP": str(tmp_path),
            "STEPS": "/s",
            "OUTCOMES": "/o",
            "DECLARED": said,
            "MAX_ISSUES": most,
            "GITHUB_REPOSITORY": "octo/perfbot",
            "RUN_URL": "https://github.com/octo/perfbot/actions/runs/1",
        },
    )
    assert done.returncode == 0, done.stdout + done.stderr
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[argv.index("--declared") + 1] == str(tmp_path / "declared.json")
    assert (tmp_path / "seen").read_text() == said + "\n"
    assert (argv[argv.index("--max-issues") + 1] == most) if most else "--max-issues" not in argv


# The steps that print what the store, a results file or the measured code holds, in the jobs
# that hold write tokens: (workflow, job, step name).
PRINTING_STEPS = [
    ("baseline.yml", "store", "Store on perfbot-baselines, check the history, rebuild the site"),
    ("baseline.yml", "issues", "Open the issues"),
    ("gpu-check.yml", "comment", "Post the comment and set the status"),
]


STOP = ". .github/perfbot/stop-commands.sh"


@pytest.mark.parametrize(("workflow", "job", "name"), PRINTING_STEPS)
def test_steps_that_print_stored_values_stop_workflow_commands_first(workflow: str, job: str, name: str):
    """Before the first perfbot command, the step sources stop-commands.sh, which stops workflow
    commands until the step ends; its own error lines come before, and no EXIT trap of its own
    comes after to replace the one that resumes them."""
    lines = [line.strip() for line in _run_step(workflow, job, name).splitlines()]
    stop = lines.index(STOP)
    first = next(
        i for i, line in enumerate(lines) if not line.startswith("#") and re.search(r"perfbot |push-baseline\.sh", line)
    )
    assert stop < first, name
    assert not any("::error::" in line or line.startswith("trap ") for line in lines[stop + 1 :]), name


def test_workflow_commands_are_stopped_in_one_place():
    """The three steps source one script; no workflow stops commands on its own."""
    sourcing = [
        (path.name, job_name, step["name"])
        for path in WORKFLOWS
        for job_name, job in _load(path)["jobs"].items()
        for step in job.get("steps", [])
        if STOP in step.get("run", "")
    ]
    assert sorted(sourcing) == sorted(PRINTING_STEPS)
    assert not any("stop-commands::" in path.read_text() for path in WORKFLOWS)


def test_stop_commands_holds_until_the_step_ends_however_it_ends(tmp_path: Path):
    """Sourced as the steps source it, under bash -e as Actions runs them: a line that names a
    workflow command, on stdout or stderr, is not acted on, and the step's exit code is kept.
    Each step draws a token of its own."""
    from tests.actions import workflow_commands

    script = f"{STOP}\necho '::add-mask::secret'\necho '::warning::from stderr' >&2\nfalse\necho never\n"
    runs = [
        subprocess.run(["bash", "-e", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
        for _ in range(2)
    ]
    for done in runs:
        first, *lines, last = done.stdout.splitlines()
        assert done.returncode == 1 and done.stderr == "", done.stdout + done.stderr
        assert re.fullmatch(r"::stop-commands::[0-9a-f]{32}", first) and last == f"::{first.rsplit(':', 1)[1]}::"
        assert lines == ["::add-mask::secret", "::warning::from stderr"]
        assert workflow_commands(done.stdout) == []
    assert runs[0].stdout.splitlines()[0] != runs[1].stdout.splitlines()[0]


@pytest.mark.slow
def test_a_stored_gpu_name_that_is_a_workflow_command_is_not_acted_on(tmp_path: Path):
    """Issue 53: the history check prints each new step on a line that starts with its GPU's
    name, from the store. The store step, as Actions runs it, with a GPU named like a workflow
    command: the line is in the log, and the runner acts on none of it."""
    from perfbot.records import results
    from tests.actions import workflow_commands
    from tests.history_store import make_runs

    hostile = "::add-mask::rotate-now ::warning::forged by the store"
    runs = [
        replace(run, environment=replace(run.environment, gpu_name=hostile))
        for run in make_runs(30, step=0.03, at=24, seed=3)
    ]
    remote = _baselines_branch(tmp_path, runs[:-1])
    (tmp_path / "runs" / "perfbot-baseline-h200").mkdir(parents=True)
    results.save(runs[-1], tmp_path / "runs" / "perfbot-baseline-h200" / "main.json")
    done = _step_script(
        "store",
        "Store on perfbot-baselines, check the history, rebuild the site",
        ROOT,
        {
            "PATH": f"{BIN}:{os.environ['PATH']}",
            "HOME": str(tmp_path),
            "PYTHONPATH": str(ROOT),
            "PERFBOT": str(BIN / "perfbot"),
            "PERFBOT_BASELINE_REMOTE": str(remote),
            "GITHUB_SHA": "c0ffee",
            "RUNS": str(tmp_path / "runs"),
            "STEPS": str(tmp_path / "steps"),
            "GITHUB_OUTPUT": str(tmp_path / "store.out"),
        },
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""  # all of it through stdout, in order
    assert any(line.startswith(hostile) for line in done.stdout.splitlines()), done.stdout
    assert workflow_commands(done.stdout) == []
    # Without the stop, the runner would have acted on it: the same log, its first and last lines cut.
    assert workflow_commands("\n".join(done.stdout.splitlines()[1:-1]))[0].startswith("::add-mask::rotate-now")
    tokens = [line for line in done.stdout.splitlines() if line.startswith("::stop-commands::")]
    assert len(tokens) == 1 and re.fullmatch(r"::stop-commands::[0-9a-f]{32}", tokens[0])
    assert done.stdout.rstrip().splitlines()[-1] == "::" + tokens[0].removeprefix("::stop-commands::") + "::"


def test_the_comment_steps_stop_holds_whatever_the_report_says(tmp_path: Path):
    """The post step again, where a GPU's job left an error.txt naming a workflow command and
    perfbot fails (a PR whose head moved): the runner acts on no line of the log, and the stop
    is lifted at the end."""
    from tests.actions import workflow_commands
    from tests.fake_github import FakeGitHub

    reports = tmp_path / "reports"
    (reports / "perfbot-report-a100").mkdir(parents=True)
    (reports / "perfbot-report-a100" / "error.txt").write_text("::warning::from the GPU\n")
    with FakeGitHub(token="ghs_commentTOKEN") as fake:
        fake.add_pull("octo/perfbot", 7, "b" * 40)
        done = _post_step(tmp_path, fake.url, "ghs_commentTOKEN", "f" * 40, '["a100", "::error::x"]', reports, 1)
    assert done.returncode != 0 and done.stderr == ""
    assert workflow_commands(done.stdout) == [], done.stdout
    assert done.stdout.splitlines()[0].startswith("::stop-commands::")


def _codeowners(project: Path, where: str | None, text: str, kernels: str | None = None) -> subprocess.CompletedProcess:
    """codeowners.sh in `project`, whose CODEOWNERS at `where` holds `text` and whose pyproject.toml,
    where `kernels` is given, names that subject's folder."""
    (project / ".github").mkdir(parents=True, exist_ok=True)
    if where is not None:
        (project / where).parent.mkdir(parents=True, exist_ok=True)
        (project / where).write_text(text)
    if kernels is not None:
        (project / "pyproject.toml").write_text(f"[tool.perfbot]\nkernels = {json.dumps(kernels)}\n")
    return subprocess.run(
        ["bash", str(ROOT / ".github" / "perfbot" / "codeowners.sh")], cwd=project, capture_output=True, text=True
    )


# The shipped rules, filled in: each protected path, the subject's folder kernels/ by default.
FILLED = (
    "/.github/ @octo/perfbot-maintainers\n/thresholds.yaml @octo/perfbot-maintainers alice@example.com\n"
    "/pyproject.toml @octo/perfbot-maintainers\n/kernels/ @octo/perfbot-maintainers @alice\n"
)


@pytest.mark.parametrize(
    ("where", "text", "ok"),
    [
        (".github/CODEOWNERS", FILLED, True),
        ("CODEOWNERS", FILLED, True),
        ("docs/CODEOWNERS", FILLED, True),
        (".github/CODEOWNERS", "# the maintainers\n* @alice  # every file\n", True),
        (".github/CODEOWNERS", "* @octo/team\n# perfbot init: fill in OWNER: @OWNER/perfbot-maintainers\n", True),
        (None, "", False),  # no file: nothing needs a code owner
        (".github/CODEOWNERS", "", False),
        (".github/CODEOWNERS", "# only comments\n/.github/\n", False),  # a rule without an owner
        (".github/CODEOWNERS", "/.github/ @OWNER/perfbot-maintainers\n", False),  # as shipped
        (".github/CODEOWNERS", "/.github/ @octo/team\n/perfbot/ @owner/perfbot-maintainers\n", False),
        (".github/CODEOWNERS", "/kernels/ @alice @OWNER/perfbot-maintainers\n", False),
        (".github/CODEOWNERS", "* *\n", False),  # no owner GitHub knows: it skips the line
    ],
)
def test_the_gpu_workflows_refuse_to_start_while_codeowners_holds_the_placeholder(
    where: str | None, text: str, ok: bool, tmp_path: Path
):
    done = _codeowners(tmp_path / "project", where, text)
    assert done.returncode == (0 if ok else 2), done.stdout + done.stderr
    if not ok:
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("::error::")
        assert "Require review from Code Owners" in done.stderr and "SECURITY.md, setting 7" in done.stderr


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # The last line, without a final newline, is read too.
        ("* @octo/team\n/.github/ @OWNER/perfbot-maintainers", "still names the placeholder @OWNER/... (1 times)"),
        ("* @octo/team\n/.github/", ":2: `/.github/` names no owner, and it is the last rule sure to cover .github/"),
        # GitHub applies the last rule that matches: a later one without owners leaves files without.
        ("* @octo/team\n/.github/\n", ":2: `/.github/` names no owner, and it is the last rule sure to cover .github/"),
        ("* @octo/team\n.github/ \n", ":2: `.github/` names no owner"),
        ("* @octo/team\n/.github/workflows/\n", ":2: `/.github/workflows/` names no owner, and it may apply"),
        (
            "* @octo/team\n*.yml\n",
            ":2: `*.yml` names no owner, and it may apply, after that rule, to files in .github/",
        ),
        ("* @octo/team\n/thresholds.yaml\n", ":2: `/thresholds.yaml` names no owner"),
        ("* @octo/team\n/kernels/gemm.py # no owner\n", ":2: `/kernels/gemm.py` names no owner"),
        ("* @octo/team\n/.github/ @octo/team *\n", ":2: `/.github/` names *, which is no user"),
        # Owners somewhere, but not of each protected path.
        ("/.github/ @octo/team\n", "no rule of .github/CODEOWNERS is sure to cover all of thresholds.yaml"),
        ("/kernels/ @octo/team\n", "no rule of .github/CODEOWNERS is sure to cover all of .github/"),
    ],
)
def test_codeowners_is_read_as_github_applies_it_the_last_matching_rule(text: str, said: str, tmp_path: Path):
    """Each of these passed the check that counted owners anywhere in the file."""
    done = _codeowners(tmp_path / "project", ".github/CODEOWNERS", text)
    assert done.returncode == 2 and said in done.stderr, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "SECURITY.md, setting 7" in done.stderr


@pytest.mark.parametrize(
    "text",
    [
        "* @octo/team\n/docs/\n",  # a rule without owners elsewhere leaves the protected paths alone
        "/.github/workflows/\n* @octo/team\n",  # an earlier rule, overridden
        "* @octo/team\n/.github/workflows/ @octo/ci\n",
        "* @octo/team\n/kernels2/\n/thresholds.yaml.bak\n",
        "**/.github/ @octo/team\nthresholds.yaml @octo/team\n/pyproject.toml @octo/team\nkernels/ @octo/team\r\n",
    ],
)
def test_codeowners_that_owns_each_protected_path_passes(text: str, tmp_path: Path):
    done = _codeowners(tmp_path / "project", ".github/CODEOWNERS", text)
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
    assert (
        done.stdout
        == "code owners: .github/CODEOWNERS gives an owner to .github/, thresholds.yaml, pyproject.toml, kernels/\n"
    )


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (FILLED.replace("/kernels/", "/perf/my\\ dir/"), ""),
        ("* @octo/team\n/perf/my\\ other/\n", ""),
        ("/perf/my\\ dir/\n", "names no owner"),  # `dir/` is the pattern's, not an owner
        ("* @octo/team\n/perf/my\\ dir/\n", ":2: `/perf/my\\ dir/` names no owner"),
        (
            "* @octo/team\n/perf/\n",
            ":2: `/perf/` names no owner, and it may apply, after that rule, to files in perf/my dir/",
        ),
        (
            FILLED.replace("/kernels/", "/perf/my/"),
            "sure to cover all of perf/my dir/ (`/perf/my\\ dir/ @ORG/TEAM` is)",
        ),
    ],
)
def test_the_subjects_folder_is_the_one_pyproject_names_spaces_escaped(text: str, said: str, tmp_path: Path):
    """[tool.perfbot] kernels names the subject's folder, which perfbot init writes into CODEOWNERS
    with its spaces escaped (`/perf/my\\ dir/`): one word, the pattern, never an owner."""
    done = _codeowners(tmp_path / "project", ".github/CODEOWNERS", text, kernels="perf/my dir")
    if not said:
        assert done.returncode == 0 and done.stdout.rstrip().endswith(", perf/my dir/"), done.stdout + done.stderr
    else:
        assert done.returncode == 2 and said in done.stderr, done.stdout + done.stderr


def test_perfbot_is_protected_where_it_is_in_the_repository(tmp_path: Path):
    project = tmp_path / "project"
    (project / "perfbot").mkdir(parents=True)
    done = _codeowners(project, ".github/CODEOWNERS", FILLED)
    assert done.returncode == 2 and "sure to cover all of perfbot/" in done.stderr, done.stderr
    done = _codeowners(project, ".github/CODEOWNERS", FILLED + "/perfbot/ @octo/perfbot-maintainers")
    assert done.returncode == 0 and done.stdout.rstrip().endswith("kernels/, perfbot/"), done.stdout + done.stderr


def test_github_reads_the_first_codeowners_so_the_check_does_too(tmp_path: Path):
    project = tmp_path / "project"
    _codeowners(project, "CODEOWNERS", FILLED)
    shadowed = _codeowners(project, ".github/CODEOWNERS", "* @OWNER/perfbot-maintainers\n")
    assert shadowed.returncode == 2 and ".github/CODEOWNERS still names the placeholder" in shadowed.stderr


def test_this_repository_as_shipped_fails_loudly_until_its_codeowners_is_filled_in():
    """perfbot's own CODEOWNERS is the template adopters fill in (test_codeowners_cover_...): as it
    stands, the check refuses, and every workflow that asks for a GPU runner runs it first, on a
    GitHub-hosted runner."""
    done = subprocess.run(["bash", ".github/perfbot/codeowners.sh"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 2 and "still names the placeholder @OWNER/" in done.stderr
    for workflow, first in (("gpu-check.yml", "decide"), ("baseline.yml", "gpus"), ("bisect.yml", "allowed")):
        jobs = _load(ROOT / ".github" / "workflows" / workflow)["jobs"]
        assert jobs[first]["runs-on"] == "ubuntu-latest"
        assert jobs[first]["steps"][1].get("run") == ".github/perfbot/codeowners.sh", workflow  # after the checkout
        for name, job in jobs.items():
            if "self-hosted" in job["runs-on"]:  # every GPU job waits for that first job, through others or not
                assert first in _all_needs(jobs, name), (workflow, name)


def _all_needs(jobs: dict, name: str) -> set[str]:
    needs = jobs[name].get("needs", [])
    direct = {needs} if isinstance(needs, str) else set(needs)
    return direct.union(*(_all_needs(jobs, n) for n in direct))


def _upstream(tmp_path: Path) -> tuple[Path, dict[str, str], dict[str, str]]:
    """A repository standing in for github.com/octo/perfbot: main with three commits, a fork's
    commit GitHub serves under the same address (refs/pull/1/head), and a commit of another
    branch; git is told to fetch https://github.com/octo/perfbot from it (url.insteadOf)."""
    work = tmp_path / "work"
    _git("init", "--quiet", "--initial-branch=main", str(work))
    commits = {}
    for name in ("first", "second", "tip"):
        (work / "f").write_text(name)
        _git("add", "f", cwd=work)
        _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", name, cwd=work)
        commits[name] = _git("rev-parse", "HEAD", cwd=work)
    for name, ref in (("fork", "refs/pull/1/head"), ("branch", "refs/heads/feature")):
        _git("checkout", "--quiet", "-b", name, commits["second"], cwd=work)
        (work / "f").write_text(name)
        _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-am", name, cwd=work)
        commits[name] = _git("rev-parse", "HEAD", cwd=work)
        _git("update-ref", ref, commits[name], cwd=work)
    _git("checkout", "--quiet", "main", cwd=work)
    upstream = tmp_path / "perfbot.git"
    _git("clone", "--quiet", "--bare", "--mirror", str(work), str(upstream))
    _git("-C", str(upstream), "config", "uploadpack.allowFilter", "true")
    _git("-C", str(upstream), "config", "uploadpack.allowAnySHA1InWant", "true")  # as GitHub serves a fork's commit
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": f"url.{upstream.as_uri()}.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/octo/perfbot.git",
        "GIT_CONFIG_KEY_1": "protocol.file.allow",
        "GIT_CONFIG_VALUE_1": "always",
    }
    return upstream, commits, env


def _verify(env: dict[str, str], commit: str) -> subprocess.CompletedProcess:
    """install.sh verify, as the GPU workflows' first jobs run it, for perfbot pinned at `commit`."""
    return subprocess.run(
        ["bash", str(ROOT / ".github" / "perfbot" / "install.sh"), "verify"],
        cwd=ROOT,
        env={**env, "PERFBOT_SOURCE": f"git+https://github.com/octo/perfbot@{commit}"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("which", "rc", "said"),
    [
        ("tip", 0, "perfbot from git+https://github.com/octo/perfbot@"),
        ("first", 0, "perfbot from git+https://github.com/octo/perfbot@"),
        ("fork", 2, "PERFBOT_SOURCE's commit is not on the default branch of octo/perfbot"),
        ("branch", 2, "PERFBOT_SOURCE's commit is not on the default branch of octo/perfbot"),
        ("0" * 40, 2, "PERFBOT_SOURCE's commit is not on the default branch of octo/perfbot"),
    ],
)
def test_verify_takes_perfbot_only_at_a_commit_of_its_default_branch(which: str, rc: int, said: str, tmp_path: Path):
    """Issue 53: GitHub serves a fork's commit under the upstream's address, so a well-formed pin
    can name code no one reviewed. install.sh verify, as the first job of each GPU workflow runs
    it, against a repository served in its stead."""
    _, commits, env = _upstream(tmp_path)
    done = _verify(env, commits.get(which, which))
    assert done.returncode == rc and said in done.stdout + done.stderr, done.stdout + done.stderr
    if rc:
        assert done.stderr.startswith("::error::") and done.stderr.count("\n") == 1


def test_verify_fails_when_the_repository_cannot_be_read(tmp_path: Path):
    upstream, commits, env = _upstream(tmp_path)
    shutil.rmtree(upstream)
    done = _verify(env, commits["tip"])
    assert done.returncode == 3 and "could not read the default branch of octo/perfbot" in done.stderr


def test_the_gpu_workflows_verify_the_source_first_and_check_nothing_else_there():
    """The first job of each GPU workflow runs install.sh verify, on a GitHub-hosted runner, before
    any GPU job; `check` stays the form alone (no network), as the other jobs' installs check it."""
    for workflow, first in (("gpu-check.yml", "decide"), ("baseline.yml", "gpus"), ("bisect.yml", "allowed")):
        steps = _load(ROOT / ".github" / "workflows" / workflow)["jobs"][first]["steps"]
        verify = [s for s in steps if s.get("run") == ".github/perfbot/install.sh verify"]
        assert len(verify) == 1 and verify[0]["env"] == {"PERFBOT_SOURCE": "${{ vars.PERFBOT_SOURCE }}"}, workflow
    install = (ROOT / ".github" / "perfbot" / "install.sh").read_text()
    assert 'if [ "$kind" = verify ] && [ "$source" != . ]; then' in install
