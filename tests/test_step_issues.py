"""`perfbot history open-issues` against the loopback GitHub (tests/fake_github.py): one issue per
failing step, none for a step its bisect did not reproduce, none twice, every value escaped, and
one-line errors with the documented exit codes."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.errors import BadInput
from perfbot.history import steps_file
from perfbot.history.steps_file import StepRecord
from perfbot.jobs import bisect_outcome, step_issues
from perfbot.jobs.bisect_outcome import OutcomeFile, ProbeRecord
from perfbot.jobs.step_issues import BODY_LIMIT, marker
from perfbot.output.github import ACTIONS_BOT, GitHub
from perfbot.records import declared, results
from perfbot.records import store as stored_runs
from tests.fake_github import FakeGitHub
from tests.history_store import make_runs, write_store

# The module's fixtures (a checked store's steps file, what main's suites declare) are built once
# per worker: on one worker, once.
pytestmark = pytest.mark.xdist_group("step-issues")

TOKEN = "ghs_issuesTOKENvalue"
REPO = "octo/perfbot"
RUN_URL = "https://github.com/octo/perfbot/actions/runs/42"


def _store_steps(tmp_path: Path, runs=None, runner: bool = True) -> Path:
    runs = runs or make_runs(40, step=0.03, at=24, seed=11)
    store = write_store(tmp_path / "store", runs)
    run_file = tmp_path / "h200.json"
    results.save(runs[-1], run_file)
    steps = tmp_path / "steps.json"
    args = ["history", "--store", str(store), "--check", "--out-steps", str(steps)]
    CliRunner().invoke(perfbot, [*args, *(["--runner", f"h200={run_file}"] if runner else [])])
    return steps


@pytest.fixture(scope="module")
def steps_text(tmp_path_factory) -> str:
    """The steps file of a store with a 3% step in the fused kernel's two series, given to h200."""
    return _store_steps(tmp_path_factory.mktemp("store")).read_text()


@pytest.fixture
def steps(tmp_path: Path, steps_text: str) -> Path:
    path = tmp_path / "steps.json"
    path.write_text(steps_text)
    return path


@pytest.fixture
def fake(monkeypatch):
    with FakeGitHub(token=TOKEN) as server:
        monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
        monkeypatch.setenv("GITHUB_API_URL", server.url)
        yield server


def _records(steps: Path) -> list[StepRecord]:
    return steps_file.load(steps).steps


def _probes(record: StepRecord, culprit: str, subject: str = "change 24: retile") -> list[ProbeRecord]:
    return [
        ProbeRecord(record.good.commit, "change 21", 30, 1.0, "good", None),
        ProbeRecord(culprit, subject, 30, 1.03, "bad", None),
        ProbeRecord(record.bad.commit, "change 26", 30, 1.031, "bad", None),
    ]


def outcome(folder: Path, record: StepRecord, result: str = "culprit", **fields) -> OutcomeFile:
    """The outcome the bisect job would have left for the step, in the folder of its artifact."""
    culprit = "c" * 40
    made = {
        "culprit": OutcomeFile(
            "culprit", record.good.commit, record.bad.commit, f"first bad commit: {culprit}", culprit, [culprit], 6,
            _probes(record, culprit),
        ),
        "no-culprit": OutcomeFile(
            "no-culprit", record.good.commit, record.bad.commit,
            "the first bad commit is one of cccccccccccc, dddddddddddd: the commits between could not be built or "
            "measured", None, ["c" * 40, "d" * 40], 6, _probes(record, "c" * 40),
        ),
        "not-reproduced": OutcomeFile(
            "not-reproduced", record.good.commit, record.bad.commit,
            f"bad {record.bad.commit[:12]} is not significantly slower than good {record.good.commit[:12]}: medians "
            "1.0003 vs 1.0001 ms (+0.02%, one-sided Mann-Whitney p=0.41; needs p < 0.01 and more than 1%)",
        ),
        "failed": OutcomeFile(
            "failed", record.good.commit, record.bad.commit,
            f"the good end {record.good.commit[:12]} cannot be measured: measure exited 1: the kernel does not compile",
        ),
    }[result]  # fmt: skip
    made = replace(made, **fields)
    bisect_outcome.save(folder / f"perfbot-bisect-{record.runner}" / f"{record.id}.json", made)
    return made


def declaring(path: Path, benchmarks) -> Path:
    """A declarations file (`perfbot suites --json`) whose suites declare exactly `benchmarks`,
    (suite, case, implementation) each."""
    suites: dict[str, tuple[list[str], list[str]]] = {}
    for suite, case, kernel in benchmarks:
        kernels, cases = suites.setdefault(suite, ([], []))
        kernels.extend([kernel] * (kernel not in kernels))
        cases.extend([case] * (case not in cases))
    path.write_text(declared.to_text((name, kernels, cases) for name, (kernels, cases) in suites.items()) + "\n")
    return path


def open_issues(steps: Path, outcomes: Path, *extra: str, declared_file: Path | None = None):
    """open-issues, where main declares every benchmark the steps file names unless told otherwise."""
    if declared_file is None:
        named = [(r.benchmark.suite, r.benchmark.case, r.benchmark.kernel) for r in _records(steps)]
        declared_file = declaring(steps.with_name("declared.json"), named)
    return CliRunner().invoke(
        perfbot,
        [
            *("history", "open-issues", "--steps", str(steps), "--outcomes", str(outcomes), "--repo", REPO),
            *("--declared", str(declared_file), *extra),
        ],
    )


def _posts(fake: FakeGitHub) -> list:
    return [r for r in fake.requests if r.method in ("POST", "PATCH")]


def test_one_issue_per_step_with_its_culprit_and_evidence_and_none_twice(fake, steps, tmp_path: Path):
    records = _records(steps)
    for record in records:
        outcome(tmp_path / "bisect", record)
    first = open_issues(steps, tmp_path / "bisect", "--run-url", RUN_URL)
    assert first.exit_code == 0, first.output
    issues = fake.issues[REPO]
    assert len(issues) == len(records) == 2 and first.output.count("opened: ") == 2
    for record, issue in zip(records, issues, strict=True):
        body = issue["body"]
        assert body.rstrip().splitlines()[-1] == marker(record.id) and body.count("<!-- ") == 1
        assert issue["user"]["login"] == ACTIONS_BOT and issue["state"] == "open"
        # Titled with the declared names, the change, the runner label and the run: no text of the store.
        case = record.benchmark.case
        assert issue["title"] == f"perfbot: fused {record.change_percent:+.2f}% on pr/{case} (h200), run 25"
        assert "**Culprit:** `cccccccccccc` change 24: retile — the first bad commit `" + "c" * 40 in body
        assert (
            f"| from run | 25 (stored {record.after.stored}); the run before: 24 (stored {record.before.stored}) |"
            in body
        )
        assert f"| commit range | `{record.good.commit[:12]}` (run 22) to `{record.bad.commit[:12]}` (run 27) |" in body
        printed = f"{' '.join(record.bisect[:9])} '{record.bisect[9]}'"  # the command, as the check printed it
        assert f"```sh\n{printed}\ngit show {'c' * 40}\n```" in body
        for line in record.evidence:  # the check's lines, as list items (an @ is no mention there)
            assert f"- {line.strip()}" in body.replace("\\_", "_").replace("\\|", "|").replace("@\u200d", "@")
        assert f"```sh\nperfbot history ack --store store --step {record.id} --reason '...'\n```" in body
        assert f"<sub>Step `{record.id}`, opened by" in body
        assert "| `cccccccccccc` | change 24: retile | 30 | 1.0300 | +3.00% | bad (first bad) | — |" in body
        assert f"opened by <{RUN_URL}>" in body and len(body) <= BODY_LIMIT
    again = open_issues(steps, tmp_path / "bisect", "--run-url", RUN_URL)
    assert again.exit_code == 0 and again.output.count("exists, not opened again: ") == 2, again.output
    assert len(fake.issues[REPO]) == 2


def test_a_closed_issue_of_the_step_counts_and_so_does_a_step_found_on_page_three(fake, steps, tmp_path: Path):
    first, second = _records(steps)
    for record in (first, second):
        outcome(tmp_path / "bisect", record)
    fake.add_issue(REPO, "fixed", f"old\n{marker(first.id)}\n", login=ACTIONS_BOT, user_type="Bot", state="closed")
    fake.add_issue(REPO, "old", f"older\n{marker(second.id)}\n", login=ACTIONS_BOT, user_type="Bot")
    for index in range(150):  # newer issues first: the step's own are on the last page
        fake.add_issue(REPO, f"issue {index}", "chatter")
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 0 and result.output.count("exists, not opened again") == 2, result.output
    assert len(fake.issues[REPO]) == 152 and _posts(fake) == []


def test_a_marker_not_ours_or_not_last_opens_the_issue_still(fake, steps, tmp_path: Path):
    first, second = _records(steps)
    for record in (first, second):
        outcome(tmp_path / "bisect", record)
    fake.add_issue(REPO, "forged", f"to silence the bot\n{marker(first.id)}\n", login="mallory")
    quoted = (
        f"```\n{marker(second.id)}\n```\nthe bot's own issue, quoting another step's marker\n{marker('f' * 16 + '-x')}"
    )
    fake.add_issue(REPO, "quote", quoted, login=ACTIONS_BOT, user_type="Bot")
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 0 and result.output.count("opened: ") == 2, result.output


def test_an_issue_older_than_the_step_is_not_the_steps(fake, steps, tmp_path: Path):
    (record, _) = _records(steps)
    for r in _records(steps):
        outcome(tmp_path / "bisect", r)
    fake.add_issue(REPO, "long ago", f"x\n{marker(record.id)}\n", login=ACTIONS_BOT, user_type="Bot")
    fake.issues[REPO][0]["updated_at"] = "2020-01-01T00:00:00Z"  # two days before its step's run: not listed
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 0 and result.output.count("opened: ") == 2, result.output
    listing = next(r for r in fake.requests if r.method == "GET" and "/issues?" in r.path)
    assert "state=all" in listing.path and "since=" in listing.path


def test_a_step_the_bisect_did_not_reproduce_gets_no_issue_and_one_line(fake, steps, tmp_path: Path):
    first, second = _records(steps)
    outcome(tmp_path / "bisect", first, "not-reproduced")
    outcome(tmp_path / "bisect", second, "not-reproduced")
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert len(lines) == 2 and all(line.startswith("not opened: step ") for line in lines)
    assert (
        f"not opened: step {first.id} ({first.label} on NVIDIA H200): the bisect did not reproduce it: bad " in lines[0]
    )
    assert fake.issues == {} and fake.requests == []  # GitHub is not even asked


def test_no_culprit_says_why_and_still_opens_the_issue(fake, steps, tmp_path: Path):
    first, second = _records(steps)
    outcome(tmp_path / "bisect", first, "no-culprit")
    outcome(tmp_path / "bisect", second, "failed")
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 0, result.output
    hidden, stopped = (issue["body"] for issue in fake.issues[REPO])
    assert (
        "**No culprit:** the bisect found no step at a single commit: the first bad commit is one of cccccccccccc, "
        "dddddddddddd: the commits between could not be built or measured." in hidden
    )
    assert "**Culprit:**" not in hidden and "| `cccccccccccc` | change 24: retile | 30 |" in hidden
    assert "**No culprit:** the bisect found no step: it stopped before a verdict: the good end " in stopped
    assert "the kernel does not compile" in stopped and "| commit |" not in stopped


def test_the_issue_says_what_changed_in_the_compiled_code_at_the_culprit(fake, steps, tmp_path: Path):
    """From the outcome file: the culprit's kernels against the last good commit's, each value
    escaped (a kernel's name comes from the GPU runner); an outcome without any shows nothing."""
    from perfbot.deciding.compiled_change import compiled_change
    from tests import compiled_records as records

    first, second = _records(steps)
    before, after = (replace(k, name="k|<!-- x -->") for k in (records.DECODE_BLOCK_K_128, records.DECODE_BLOCK_K_64))
    change = compiled_change(records.compiled(before), records.compiled(after))
    outcome(tmp_path / "bisect", first, last_good=first.good.commit, earliest_bad="c" * 40, compiled_change=change)
    outcome(tmp_path / "bisect", second)
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 0, result.output
    shown, plain = (issue["body"] for issue in fake.issues[REPO])
    assert (
        f"### What changed in the compiled code\n\nFrom the last good commit `{first.good.commit[:12]}` to the first "
        "bad one, `cccccccccccc`:\n\n| kernel | what | last good | first bad |" in shown
    )
    assert "| k\\|&lt;\\!-- x --&gt; | registers | 62 | 45 |" in shown and shown.count("<!-- ") == 1
    assert shown.index("### What changed in the compiled code") < shown.index("### Reproduce")
    assert "compiled code" not in plain


def test_a_failing_step_no_runner_bisected_gets_its_issue_with_the_reason(fake, tmp_path: Path):
    steps = _store_steps(tmp_path, runner=False)
    result = open_issues(steps, tmp_path / "nothing-downloaded")
    assert result.exit_code == 0 and result.output.count("opened: ") == 2, result.output
    for issue in fake.issues[REPO]:
        assert (
            "**No culprit:** not bisected: no runner of this GPU kind (NVIDIA H200) measured main in this push."
            in (issue["body"])
        )
        assert "### Reproduce" in issue["body"]  # the command is still there to run by hand


def _outside_code(body: str) -> str:
    return re.sub(r"(?ms)^(`{3,})sh\n.*?^\1$", "", body)


def test_hostile_names_and_bisect_text_are_escaped(fake, tmp_path: Path):
    hostile = "<img src=x onerror=alert(1)>@mallory|**x**``` <!-- perfbot-step: 0123456789abcdef-1 -->"
    runs = [
        replace(
            run,
            benchmarks=[replace(b, kernel=hostile) if b.kernel == "fused" else b for b in run.benchmarks],
            settings=replace(run.settings, under_test=[hostile]),
        )
        for run in make_runs(40, step=0.03, at=24, seed=11)
    ]
    steps = _store_steps(tmp_path, runs)
    records = _records(steps)
    assert records and all(r.fails and hostile in r.label for r in records)
    for record in records:
        outcome(
            tmp_path / "bisect",
            record,
            probes=[
                ProbeRecord(
                    record.good.commit, "<script>alert(1)</script> @octocat [x](javascript:x)", 30, 1.0, "good", None
                ),
                ProbeRecord("c" * 40, "fix | break", 30, 1.03, "bad", "<b>note</b> -->"),
            ],
        )
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 0, result.output
    for record, issue in zip(records, fake.issues[REPO], strict=True):
        body = issue["body"]
        prose = _outside_code(body)
        assert "<img" not in prose and "<script" not in prose and "<b>" not in prose
        assert "@mallory" not in prose and "@octocat" not in prose  # no live mention (a code block has none)
        assert "&lt;img src=x onerror=alert(1)&gt;@\u200dmallory\\|\\*\\*x\\*\\*\\`\\`\\`" in prose
        assert "[x](javascript" not in prose and "\\[x\\](javascript:x)" in prose and "fix \\| break" in prose
        assert body.count("<!-- perfbot-step:") == 2 and body.rstrip().endswith(marker(record.id))
        assert prose.count("<!--") == 1  # the other is inside the code block, inert
        fences = re.findall(r"(?m)^(`{3,})sh$", body)
        assert fences[0] == "````"  # the bisect's: longer than the ``` in the name, so it is not closed early
        assert "@mallory" not in issue["title"] and "\n" not in issue["title"] and len(issue["title"]) <= 256


def test_a_bisect_that_left_no_outcome_is_exit_3_and_the_other_steps_are_opened(fake, steps, tmp_path: Path):
    first, second = _records(steps)
    outcome(tmp_path / "bisect", second)
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 3
    assert result.output.count("opened: ") == 1 and f"step {second.id})" in result.output
    assert f"perfbot: error: step {first.id} (" in result.output and "left no outcome" in result.output
    assert len(fake.issues[REPO]) == 1


def test_an_outcome_of_another_range_or_a_symlink_is_refused(fake, steps, tmp_path: Path):
    first, second = _records(steps)
    outcome(tmp_path / "bisect", first, good="e" * 40)
    elsewhere = outcome(tmp_path / "elsewhere", second)
    assert elsewhere.result == "culprit"
    link = tmp_path / "bisect" / "perfbot-bisect-h200" / f"{second.id}.json"
    link.symlink_to(tmp_path / "elsewhere" / "perfbot-bisect-h200" / f"{second.id}.json")
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 2, result.output
    assert f"bisects eeeeeeeeeeee..{first.bad.commit[:12]}, not the step's range" in result.output
    assert "is a symlink" in result.output and fake.issues == {}


def test_a_malformed_outcome_is_one_line_and_exit_2(fake, steps, tmp_path: Path):
    first, second = _records(steps)
    outcome(tmp_path / "bisect", second)
    path = tmp_path / "bisect" / "perfbot-bisect-h200" / f"{first.id}.json"
    path.write_text(json.dumps({"format": 1, "result": "culprit", "good": "x", "bad": "y", "message": "m\n"}))
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 2 and "message: must not hold control characters" in result.output
    assert len(fake.issues[REPO]) == 1


def _no_waiting(monkeypatch, waits: list[float]) -> None:
    """The command's client, with its waits between attempts recorded instead of slept."""
    made = GitHub.from_environment.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(GitHub, "from_environment", classmethod(lambda cls, **kw: made(cls, sleep=waits.append, **kw)))


def test_github_failures_are_one_line_with_their_exit_code(fake, steps, tmp_path: Path, monkeypatch):
    for record in _records(steps):
        outcome(tmp_path / "bisect", record)
    _no_waiting(monkeypatch, [])
    fake.fail_next(503, count=5)  # every attempt
    unreachable = open_issues(steps, tmp_path / "bisect")
    assert unreachable.exit_code == 3 and unreachable.output.count("\n") == 1, unreachable.output
    assert "perfbot: error: GitHub unreachable: " in unreachable.output and TOKEN not in unreachable.output
    fake.forbid(f"/repos/{REPO}/issues")
    forbidden = open_issues(steps, tmp_path / "bisect")
    assert forbidden.exit_code == 3 and "the token needs issues: write" in forbidden.output
    no_repo = open_issues(steps, tmp_path / "bisect", "--repo", "o/none")
    assert no_repo.exit_code == 2 and "o/none: no such repository" in no_repo.output
    monkeypatch.delenv("GITHUB_TOKEN")
    no_token = open_issues(steps, tmp_path / "bisect")
    assert no_token.exit_code == 3 and "GITHUB_TOKEN is not set" in no_token.output
    assert fake.issues == {}


def test_a_5xx_is_retried_and_opens_one_issue(fake, steps, tmp_path: Path, monkeypatch):
    for record in _records(steps):
        outcome(tmp_path / "bisect", record)
    waits: list[float] = []
    _no_waiting(monkeypatch, waits)
    fake.fail_next(502, count=2)
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 0 and len(fake.issues[REPO]) == 2 and waits == [2.0, 4.0], result.output


def test_without_a_failing_step_github_is_not_asked(fake, tmp_path: Path, monkeypatch):
    runs = make_runs(40, step=-0.03, at=24, seed=2)  # faster: reported, fails nothing
    steps = _store_steps(tmp_path, runs)
    assert _records(steps) and not any(r.fails for r in _records(steps))
    monkeypatch.delenv("GITHUB_TOKEN")
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 0 and result.output == "no new slowdown: no issue to open\n"
    assert fake.requests == []


def test_a_long_bisect_is_cut_to_fit_and_keeps_its_marker(fake, steps, tmp_path: Path):
    first, second = _records(steps)
    many = [ProbeRecord(f"{i:040x}", "&" * 1000, 30, 1.0, "good", "|" * 1000) for i in range(2000)]
    outcome(tmp_path / "bisect", first, probes=many, non_monotonic=["<" * 2000] * 500)
    outcome(tmp_path / "bisect", second)
    result = open_issues(steps, tmp_path / "bisect")
    assert result.exit_code == 0, result.output
    body = fake.issues[REPO][0]["body"]
    assert len(body) <= BODY_LIMIT and body.rstrip().endswith(marker(first.id))
    assert "and 1940 more probes" in body and "cut here to fit" in body
    assert "### Culprit" in body and "### Reproduce" in body


def test_open_issue_needs_the_marker_at_the_end(fake):
    with pytest.raises(BadInput, match="must end with its marker"):
        GitHub(TOKEN, fake.url).open_issue(REPO, "t", "no marker", marker("0" * 16 + "-1"))


def test_run_url_is_checked(fake, steps, tmp_path: Path):
    result = open_issues(steps, tmp_path / "bisect", "--run-url", "javascript:alert(1)")
    assert result.exit_code == 2 and "--run-url" in result.output and fake.requests == []


HOSTILE = "Urgent: token leak, rotate now… @everyone"


@pytest.fixture(scope="module")
def mains_declarations(tmp_path_factory) -> Path:
    """What this repository's suites declare, as the baseline workflow's declared job prints it."""
    result = CliRunner().invoke(perfbot, ["suites", "--json"])
    assert result.exit_code == 0, result.output
    path = tmp_path_factory.mktemp("declared") / "declared.json"
    path.write_text(result.output)
    return path


def _generated(steps: Path, tmp_path: Path, count: int = 50, declared_every: int = 5) -> tuple[Path, set[str]]:
    """A steps file of `count` failing steps with no commit range (so nothing was bisected), as a
    writer's workflow pushing to perfbot-baselines could make the store give: every free text is
    HOSTILE; one step in `declared_every` is of a benchmark main declares, the rest in turn of a
    suite it does not declare, of its suite pr with a case of another suite (a100's d512), and of
    pr's case with an implementation of other suites only (fused-pointer). Returns the file and
    the ids of the declared steps."""
    base = _records(steps)[0]
    cases = ["square-4k", "t5-v1.1-xl", "gemma-2b-m512", "gemma-7b-m16", "a100-d2048"]
    undeclared = [
        (HOSTILE, f"{HOSTILE} {{}}", HOSTILE),  # the suite
        ("pr", "d512", "fused"),  # the case: declared, but in the suite a100
        ("pr", "gemma-7b-m16", "fused-pointer"),  # the implementation: timed in quick and a100, not in pr
    ]
    records, wanted = [], set()
    for index in range(count):
        if index % declared_every == 0:
            bench = replace(base.benchmark, suite="pr", case=cases[index % len(cases)], kernel="fused")
        else:
            suite, case, kernel = undeclared[index % len(undeclared)]
            bench = replace(base.benchmark, suite=suite, case=case.format(index), kernel=kernel)
        record = replace(
            base,
            id=f"{index:016x}@20261201T000000.{index:06d}Z",
            gpu=HOSTILE,
            label=HOSTILE,
            watched=HOSTILE,
            benchmark=bench,
            bisect=None,
            evidence=[HOSTILE] * 3,
        )
        records.append(record)
        if index % declared_every == 0:
            wanted.add(record.id)
    path = tmp_path / "generated-steps.json"
    steps_file.save(path, records)
    return path, wanted


def _errors(output: str) -> list[str]:
    return re.findall(r"(?m)^perfbot: error: .*$", output)


def _left(count: int) -> str:
    return (
        f"perfbot: error: {count} step(s) left past --max-issues: no later check lists them again; run open-issues "
        "again with the same steps file, which opens the next ones and none twice (in the baseline workflow: re-run "
        "the issues job alone)"
    )


def _stepped(issues: list) -> set[str]:
    return {re.search(r"<!-- perfbot-step: (\S+) -->", i["body"])[1] for i in issues}


def test_a_generated_store_opens_at_most_the_cap_only_for_declared_benchmarks(
    fake, steps, tmp_path: Path, mains_declarations: Path
):
    """Issue 53: 50 planned issues titled "Urgent: token leak, rotate now…". Now only the steps of
    benchmarks main's suites declare (the suite, a case of that suite and an implementation it
    times) get one, at most --max-issues a run, each titled with the declared names; the store's
    text is in no title and in no line of the log. The cap counts the issues a run opens, not
    those it finds: each re-run on the same steps file opens the next ones, and fails (exit 3)
    while any are left."""
    generated, declared_ids = _generated(steps, tmp_path)
    assert len(declared_ids) == 10
    first = open_issues(generated, tmp_path / "none", "--max-issues", "4", declared_file=mains_declarations)
    assert first.exit_code == 3, first.output
    issues = fake.issues[REPO]
    assert len(issues) == 4 and len(re.findall(r"(?m)^opened: ", first.output)) == 4
    assert first.output.count("main's suites declare no such benchmark") == 40
    assert "this run opened 4 issues, its most (--max-issues)" in first.output
    assert _errors(first.output) == [_left(6)]
    assert HOSTILE.split(":")[0] not in first.output
    title = re.compile(r"perfbot: fused [+-]\d+\.\d\d% on pr/[a-z0-9.-]+ \(h200\), run \d+")
    for issue in issues:
        assert title.fullmatch(issue["title"]), issue["title"]
    assert _stepped(issues) <= declared_ids
    # A re-run, with the same cap: 4 issues exist, and 4 more are opened.
    again = open_issues(generated, tmp_path / "none", "--max-issues", "4", declared_file=mains_declarations)
    assert again.exit_code == 3 and again.output.count("exists, not opened again") == 4, again.output
    assert len(re.findall(r"(?m)^opened: ", again.output)) == 4 and len(fake.issues[REPO]) == 8
    assert _errors(again.output) == [_left(2)]
    # And the last: the 2 left are opened, nothing is left, the job passes.
    last = open_issues(generated, tmp_path / "none", "--max-issues", "4", declared_file=mains_declarations)
    assert last.exit_code == 0 and last.output.count("exists, not opened again") == 8, last.output
    assert len(fake.issues[REPO]) == 10 and "its most" not in last.output and _errors(last.output) == []
    assert _stepped(fake.issues[REPO]) == declared_ids


def test_the_default_cap_is_ten_issues_a_run(fake, steps, tmp_path: Path, mains_declarations: Path):
    generated, _ = _generated(steps, tmp_path, count=50, declared_every=1)
    result = open_issues(generated, tmp_path / "none", declared_file=mains_declarations)
    assert result.exit_code == 3 and len(fake.issues[REPO]) == 10, result.output
    assert len(re.findall(r"(?m)^opened: ", result.output)) == 10
    assert "this run opened 10 issues, its most" in result.output and _errors(result.output) == [_left(40)]


def test_as_many_steps_as_the_cap_pass(fake, steps, tmp_path: Path, mains_declarations: Path):
    generated, _ = _generated(steps, tmp_path, count=3, declared_every=1)
    result = open_issues(generated, tmp_path / "none", "--max-issues", "3", declared_file=mains_declarations)
    assert result.exit_code == 0 and len(fake.issues[REPO]) == 3, result.output
    assert "its most" not in result.output and _errors(result.output) == []


def test_steps_past_the_cap_are_not_lost_to_the_next_check(fake, tmp_path: Path):
    """The baseline workflow, in order: the store job's check writes the steps file and records
    its steps as reported in the store (reported-steps.json, pushed with it); the issue job opens
    at most --max-issues; the next push's check lists none of those steps again. So a step left
    past the cap fails the issue job (exit 3, one line: how many, and to re-run it), and the
    re-run, on the same steps file (the artifact it downloads by id), opens its issue."""
    runs = make_runs(41, step=0.03, at=24, seed=11)
    steps = _store_steps(tmp_path, runs[:40])
    store = tmp_path / "store"
    records = _records(steps)
    assert len(records) == 2 and all(r.fails for r in records)
    state = json.loads((store / "reported-steps.json").read_text())
    assert len(state["reported"]) == 2  # both recorded as reported, before any issue is opened
    for record in records:
        outcome(tmp_path / "bisect", record)

    capped = open_issues(steps, tmp_path / "bisect", "--max-issues", "1")
    assert capped.exit_code == 3 and len(fake.issues[REPO]) == 1, capped.output
    assert f"not opened: step(s) {records[1].id}: this run opened 1 issues" in capped.output
    assert _errors(capped.output) == [_left(1)]

    # The next push to main: its run stored, the store checked again. The step left is not in it.
    stored_runs.add(store, runs[40])
    later = tmp_path / "later-steps.json"
    checked = CliRunner().invoke(perfbot, ["history", "--store", str(store), "--check", "--out-steps", str(later)])
    assert checked.exit_code == 0 and "perfbot history: no new step" in checked.output, checked.output
    assert _records(later) == []

    # Re-running the issue job: the same steps file, the same outcomes.
    rerun = open_issues(steps, tmp_path / "bisect", "--max-issues", "1")
    assert rerun.exit_code == 0 and rerun.output.count("exists, not opened again") == 1, rerun.output
    assert _stepped(fake.issues[REPO]) == {r.id for r in records} and _errors(rerun.output) == []


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--max-issues", "0"), "Invalid value for '--max-issues'"),
        (("--max-issues", "101"), "Invalid value for '--max-issues'"),
        (("--declared", "missing.json"), "missing.json"),
    ],
)
def test_a_bad_cap_or_declarations_file_is_refused_before_github_is_asked(fake, steps, tmp_path: Path, extra, said):
    result = open_issues(steps, tmp_path / "bisect", *extra)
    assert result.exit_code == 2 and said in result.output and fake.requests == [], result.output


@pytest.mark.parametrize(
    ("suite", "case", "kernel", "declares"),
    [
        ("pr", "odd", "fused", True),
        ("quick", "odd", "fused", False),  # a suite it does not declare
        ("pr", "even", "fused", False),  # a case of another of its suites
        ("pr", "odd", "torch", False),  # an implementation another of its suites times
    ],
)
def test_a_benchmark_is_declared_by_its_suite_a_case_of_that_suite_and_an_implementation_it_times(
    tmp_path: Path, suite: str, case: str, kernel: str, declares: bool
):
    made = declaring(tmp_path / "declared.json", [("pr", "odd", "fused"), ("a100", "even", "torch")])
    assert declared.load(made).declares(suite, case, kernel) is declares


@pytest.mark.parametrize(
    ("case", "mode", "declares"),
    [
        ("odd", "forward", True),
        ("odd", "backward", True),
        ("odd", "forward+backward", False),  # a mode the case is not timed in
        ("even", "forward", True),  # a case the modes do not list: the forward alone
        ("even", "backward", False),
    ],
)
def test_a_benchmark_is_declared_in_the_modes_its_case_is_timed_in(tmp_path: Path, case: str, mode: str, declares):
    text = declared.to_text([("pr", ["fused"], ["odd", "even"])], {"pr": {"odd": ["forward", "backward"]}})
    assert json.loads(text)["suites"]["pr"]["modes"] == {"odd": ["forward", "backward"]}
    (tmp_path / "declared.json").write_text(text)
    assert declared.load(tmp_path / "declared.json").declares("pr", case, "fused", mode) is declares


def test_forward_cases_alone_are_declared_as_before_modes(tmp_path: Path):
    text = declared.to_text([("pr", ["fused"], ["odd"])], {"pr": {"odd": ["forward"]}})
    assert text == '{"format":1,"suites":{"pr":{"implementations":["fused"],"cases":["odd"]}}}'


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{}",
        '{"format": 2, "suites": {}}',
        '{"format": 1, "suites": {"pr": {"implementations": [], "cases": ["x"]}}}',
        '{"format": 1, "suites": {"pr": {"implementations": ["f"], "cases": ["x\\n::warning::y"]}}}',
        '{"format": 1, "suites": {"pr": {"implementations": ["f"], "cases": ["x"], "about": "extra"}}}',
    ],
)
def test_a_declarations_file_is_read_strictly(fake, steps, tmp_path: Path, text: str):
    path = tmp_path / "declared.json"
    path.write_text(text)
    result = open_issues(steps, tmp_path / "bisect", declared_file=path)
    assert result.exit_code == 2 and result.output.startswith("perfbot: error: ") and fake.requests == []
    assert result.output.count("\n") == 1, result.output


@pytest.mark.parametrize("case", ["ffn-#26", "GH-26", "gh-7b", "org/repo#3", "at@owner"])
def test_a_title_holds_no_working_reference_or_mention(steps: Path, case: str):
    # A declared name is the repository's own, but an issue's title is sent to everyone watching
    # it: a reference there would note itself in the issue it names.
    record = _records(steps)[0]
    named = replace(record, benchmark=replace(record.benchmark, case=case))
    said = step_issues.title(named)
    joined = case.replace("#", "#\u200d").replace("@", "@\u200d").replace("GH", "GH\u200d").replace("gh", "gh\u200d")
    assert case not in said and joined in said


def test_a_step_in_a_mode_main_does_not_time_its_case_in_opens_no_issue(fake, steps, tmp_path: Path):
    """A backward step of a case main's suites time in the forward alone is not a benchmark main
    declares: no issue."""
    records = _records(steps)
    failing = [r for r in records if r.fails]
    assert failing
    steps_file.save(steps, [_in_mode(r, "backward") for r in records])
    named = [(r.benchmark.suite, r.benchmark.case, r.benchmark.kernel) for r in records]
    forward = declaring(tmp_path / "declared.json", named)
    result = open_issues(steps, tmp_path / "none", declared_file=forward)
    assert result.exit_code == 0, result.output
    assert result.output.count("main's suites declare no such benchmark") == len(failing)
    assert not fake.issues.get(REPO)


def _in_mode(record: StepRecord, mode: str) -> StepRecord:
    """The step, of its benchmark in `mode`, with the bisect command of that benchmark."""
    from perfbot.history import steps

    bench = replace(record.benchmark, mode=mode)
    if record.bisect is None:
        return replace(record, benchmark=bench)
    assert record.good.commit is not None and record.bad.commit is not None
    return replace(record, benchmark=bench, bisect=steps.bisect_argv(bench, record.good.commit, record.bad.commit))


def test_a_backward_steps_title_names_its_mode(steps: Path):
    (record, *_) = _records(steps)
    forward = step_issues.title(record)
    backward = step_issues.title(_in_mode(record, "backward"))
    kernel = record.benchmark.kernel
    assert f"perfbot: {kernel} " in forward and "[" not in forward
    assert backward == forward.replace(f"perfbot: {kernel} ", f"perfbot: {kernel}[backward] ")
