"""Hostile and broken input: every kind of bad file found in review exits 2 with one line; names
holding HTML, markers, @mentions, pipes and newlines come out inert from every markdown writer;
and, property-based, random damage to valid files is either accepted or refused in one line."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfbot.cli import perfbot
from perfbot.deciding import comparison
from perfbot.deciding.compare import compare
from perfbot.deciding.thresholds import load_policy
from perfbot.jobs.bisect import Outcome, Probe
from perfbot.output.bisect_tables import bisect_markdown
from perfbot.output.markdown import MARKER
from perfbot.output.run_tables import case_markdown, run_markdown
from perfbot.output.verdicts import comment_markdown
from perfbot.records import results
from perfbot.records.run import Failure, Results
from tests.conftest import ROOT
from tests.fake_github import FakeGitHub
from tests.helpers import make_results

POLICY = load_policy(ROOT / "thresholds.yaml")
HOSTILE = (
    "x|y\n\n# heading <script>alert(1)</script><img src=x onerror=alert(1)> <!-- @octocat "
    "<!-- perfbot-report --> `code` *em* [link](http://e.example) ~~gone~~ \r end"
)


def _valid() -> dict[str, Any]:
    return json.loads(results.to_text(make_results(seed=1)))


def _edited(edit) -> str:
    data = _valid()
    edit(data)
    return json.dumps(data)


def _first(data: dict) -> dict:
    return data["benchmarks"][0]


KINDS = {
    "failures null": lambda d: d.update(failures=None),
    "failures 5": lambda d: d.update(failures=5),
    "settings list": lambda d: d.update(settings=["x"]),
    "settings text": lambda d: d.update(settings="abc"),
    "config list": lambda d: _first(d).update(config=[1, 2]),
    "flops text": lambda d: _first(d).update(flops="many"),
    "case list": lambda d: _first(d).update(case=["a", "b"]),
    "throttle reasons numbers": lambda d: d["environment"].update(throttle_reasons=[1, 2]),
    "sample 1e308": lambda d: _first(d)["samples_ms"].__setitem__(0, 1e308),
    "sample 5e-324": lambda d: _first(d)["samples_ms"].__setitem__(0, 5e-324),
    "shape 10^400": lambda d: _first(d)["shape"].update(M=10**400),
    "too many samples": lambda d: _first(d).update(samples_ms=[1.0] * 20_000),
    "gpu name not text": lambda d: d["environment"].update(gpu_name=["NVIDIA"]),
    "name with a newline": lambda d: _first(d).update(kernel="fused\n# heading"),
    "throttled index past the samples": lambda d: _first(d).update(throttled_samples=[999]),
    "created not a date": lambda d: d.update(created="tomorrow"),
    "blocks of no rounds": lambda d: d["settings"].update(stopping="sequential", block_rounds=0),
    "a source digest not sha256": lambda d: d["settings"].update(sources={"fused": {"kernels/geglu.py": "abc"}}),
    "a source path with a newline": lambda d: d["settings"].update(sources={"fused": {"k.py\n": "0" * 64}}),
}
RAW = {
    "nested 200,000 deep": '{"format": 1, "environment": ' + "[" * 200_000 + "]" * 200_000 + "}",
    "truncated": results.to_text(make_results(seed=1))[:500],
    "not JSON at all": "\x00\x01garbage",
    "a number of 5000 digits": '{"format": 1, "environment": {}, "benchmarks": [{"kernel": "k", "shape": {"M": '
    + "9" * 5000
    + '}, "dtype": "f", "samples_ms": [1]}]}',
}
COMMANDS = [
    ["show", "{f}"],
    ["show", "{f}", "--markdown"],
    ["show", "{f}", "--by-case", "fused"],
    ["compare", "{f}", "{f}", "--out-json", "{out}"],
    ["baseline", "update", "{f}", "--store", "{store}"],
    ["export", "{f}", "--out", "{out}.pb.json"],
]


def _run_all(path: Path, tmp_path: Path, expected: set[int]) -> list[str]:
    """Run every command that reads a results file on `path`; each must exit with a code in
    `expected` and, when it refuses, say so in one line on stderr, without a traceback."""
    messages = []
    for command in COMMANDS:
        args = [a.format(f=path, out=tmp_path / "out.json", store=tmp_path / "store") for a in command]
        result = CliRunner().invoke(perfbot, args)
        assert result.exit_code in expected, (args, result.output, result.exception)
        assert "Traceback" not in result.output and not isinstance(result.exception, (AssertionError, TypeError))
        if result.exit_code == 2:
            assert result.stderr.count("\n") == 1 and result.stderr.startswith("perfbot: error: "), result.stderr
            messages.append(result.stderr)
    return messages


@pytest.mark.parametrize("kind", sorted(KINDS) + sorted(RAW))
def test_every_kind_found_in_review_exits_2_in_one_line(tmp_path: Path, kind: str):
    path = tmp_path / "run.json"
    path.write_text(_edited(KINDS[kind]) if kind in KINDS else RAW[kind])
    messages = _run_all(path, tmp_path, expected={2})
    assert all(str(path) in m for m in messages) and len(messages) == len(COMMANDS)
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "store").exists()  # nothing half-done


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path):
    path = tmp_path / "huge.json"
    with path.open("w") as handle:
        handle.write(results.to_text(make_results(seed=1))[:-3])
        handle.write(" " * (65 * 1024 * 1024) + "}\n")
    result = CliRunner().invoke(perfbot, ["show", str(path)])
    assert result.exit_code == 2 and "over 64 MiB" in result.stderr


def test_a_step_summary_that_cannot_be_written_is_an_environment_failure(tmp_path: Path, monkeypatch):
    path = tmp_path / "run.json"
    results.save(make_results(seed=1), path)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))  # a directory
    result = CliRunner().invoke(perfbot, ["compare", str(path), str(path), "--out-markdown", str(tmp_path / "c.md")])
    assert result.exit_code == 3 and "GITHUB_STEP_SUMMARY" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_files_get_the_mode_the_umask_gives(tmp_path: Path, mask: int):
    script = (
        f"import os; os.umask({mask:#o}); from pathlib import Path; from perfbot.files import write_atomic; "
        f"write_atomic(Path({str(tmp_path / 'f.txt')!r}), 'x')"
    )
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT)
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == 0o666 & ~mask


# --- markdown injection -------------------------------------------------------------------

ALLOWED_TAGS = {"<details>", "</details>", "<summary>", "</summary>", "<sub>", "</sub>"}


def assert_inert(text: str, *, marker: bool) -> None:
    """No live HTML or HTML comment, the marker only where perfbot puts it, no live @mention, no
    heading from data, and every table row as wide as its header."""
    body = text.rstrip("\n")
    if marker:
        assert body.endswith(MARKER) and body.count(MARKER) == 1
        body = body[: -len(MARKER)]
    assert MARKER not in body and "<!--" not in body
    for tag in re.findall(r"<[^<>]*>", body):
        assert tag in ALLOWED_TAGS or tag.startswith("<summary>"), tag
    assert not re.search(r"@[A-Za-z0-9_-]", body), "a live @mention"
    header_pipes = None
    for line in body.splitlines():
        assert not line.startswith("#") or line.startswith("## perfbot bisect:"), line
        if line.startswith("|"):
            pipes = len(re.findall(r"(?<!\\)\|", line))
            if header_pipes is None or line.startswith(("| benchmark", "| |")) or "suite" in line[:8]:
                header_pipes = pipes if not line.startswith("|-") else header_pipes
            assert pipes == header_pipes, line
        else:
            header_pipes = None


# What passes a loader: the same, without control characters (which no file may hold).
HOSTILE_LINE = " ".join(HOSTILE.split())


def _hostile_results(seed: int, slowdowns: dict | None = None, hostile: str = HOSTILE) -> Results:
    run = make_results(
        slowdowns,
        seed=seed,
        environment={
            "driver": hostile[:60],
            "clock_drift": hostile,
            "throttled_rounds": 2,
            "throttle_reasons": ["<b>@x</b>"],
        },
    )
    rename = {"fused": HOSTILE_LINE[:150]}
    return replace(
        run,
        benchmarks=[
            replace(
                b,
                kernel=rename.get(b.kernel, b.kernel),
                suite="<!--",
                case="@here|x",
                shape={**b.shape, "<!--": 1} if b.kernel == "gemm" else b.shape,
                config={"BLOCK_N": "<script>" if seed == 2 else 64} if b.config else None,
            )
            for b in run.benchmarks
        ],
        failures=[Failure("@team", {"<!--": 1}, "bf16", "wrong <b>result</b> @x")],
    )


def _hostile_summary(hostile: str = HOSTILE) -> comparison.Summary:
    report = compare(
        _hostile_results(1, hostile=hostile), _hostile_results(2, {("fused", "gemma-2b"): 1.2}, hostile), POLICY
    )
    return replace(
        comparison.summarize(report), trend=hostile, policy_change=["lead <!-- x", "thresholds @user: 1 → 2"]
    )


def test_the_pr_comment_and_the_comparison_file_are_inert():
    summary = _hostile_summary()
    assert_inert(comment_markdown(summary), marker=True)


def test_a_hostile_comparison_file_is_posted_inert(tmp_path: Path, monkeypatch):
    data = _hostile_summary(HOSTILE_LINE).to_json()
    data["comparisons"][0]["reason"] = "<!-- perfbot-report --> @everyone <script>"
    path = tmp_path / "comparison.json"
    path.write_text(json.dumps(data))
    with FakeGitHub(token="t0ken") as github:
        github.add_pull("octo/perfbot", 7, "a" * 40)
        monkeypatch.setenv("GITHUB_TOKEN", "t0ken")
        monkeypatch.setenv("GITHUB_API_URL", github.url)
        result = CliRunner().invoke(
            perfbot,
            [
                "comment",
                "--repo",
                "octo/perfbot",
                "--pr",
                "7",
                "--comparison",
                str(path),
                "--sha",
                "a" * 40,
                "--status",
                "failure",
            ],
        )
        assert result.exit_code == 0, result.output
        assert_inert(github.comments[("octo/perfbot", 7)][0]["body"], marker=True)


def test_compare_markdown_and_the_job_summary_are_inert(tmp_path: Path, monkeypatch):
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    results.save(_hostile_results(1, hostile=HOSTILE_LINE), base)
    results.save(_hostile_results(2, {("fused", "gemma-2b"): 1.2}, HOSTILE_LINE), head)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "summary.md"))
    result = CliRunner().invoke(perfbot, ["compare", str(base), str(head), "--out-markdown", str(tmp_path / "c.md")])
    assert result.exit_code == 1, result.output  # a real slowdown, in hostile clothes
    assert_inert((tmp_path / "c.md").read_text(), marker=True)
    assert_inert((tmp_path / "summary.md").read_text(), marker=True)


def test_show_markdown_and_by_case_are_inert(tmp_path: Path):
    run = _hostile_results(1)
    assert_inert(run_markdown(run), marker=False)
    kernel = run.benchmarks[0].kernel
    assert_inert(
        case_markdown(
            replace(run, benchmarks=[replace(b, kernel="fused") if b.kernel == kernel else b for b in run.benchmarks]),
            "fused",
        ),
        marker=False,
    )
    path = tmp_path / "run.json"
    results.save(_hostile_results(1, hostile=HOSTILE_LINE), path)
    shown = CliRunner().invoke(perfbot, ["show", str(path), "--markdown"])
    assert shown.exit_code == 0 and "wrong &lt;b&gt;result&lt;/b&gt;" in shown.output
    assert_inert(shown.output, marker=False)


def test_the_bisect_report_is_inert():
    probes = (
        Probe("a" * 40, HOSTILE.replace("\n", " "), [1.0, 1.1, 1.0], verdict="good"),
        Probe("b" * 40, "<!-- @x", [], unusable="build exited 1: <b>@x</b> | y"),
        Probe("c" * 40, "fix", [1.3, 1.3, 1.31], verdict="bad", note="not monotonic <!--"),
    )
    outcome = Outcome("c" * 40, ("c" * 40,), probes, ("cccc: not monotonic @y",), Path("s.json"), 3)
    assert_inert(bisect_markdown(outcome, "/repo <!-- @z"), marker=False)


# --- property-based: random damage is accepted or refused in one line ---------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([1e308, 5e-324, -0.0, 10**400])
    | st.text(max_size=40)
    | st.sampled_from([HOSTILE, "<!--", "@all", "x" * 3000]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):
            found += _paths(item, (*prefix, index))
    return found


@st.composite
def damaged(draw, document: dict) -> str:
    """The document with one to three random edits: a value replaced, a key dropped or added,
    or the text cut short."""
    data = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(data)))
        if not path:
            continue
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "drop", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(JSON_VALUES)
        elif action == "drop" and isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=10))] = draw(JSON_VALUES)
    text = json.dumps(data)
    if draw(st.booleans()) and draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    return text


SMALL = json.loads(
    results.to_text(replace(make_results(seed=1, n=12), benchmarks=make_results(seed=1, n=12).benchmarks[:3]))
)


@pytest.mark.slow
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(text=damaged(SMALL))
def test_damaged_results_files_are_accepted_or_refused_in_one_line(tmp_path_factory, text: str):
    work = tmp_path_factory.mktemp("damaged")
    path = work / "run.json"
    path.write_text(text)
    _run_all(path, work, expected={0, 2})


POLICY_DOCUMENT = {
    "version": 1,
    "defaults": {"fail_percent": 6.0, "warn_percent": 3.0, "alpha": 0.01, "min_samples": 10},
    "interleaved": {"fail_percent": 0.5, "warn_percent": 0.25},
    "overrides": [{"match": {"kernel": "compiled*", "shape": {"M": 16}}, "fail_percent": 10.0}],
}


@pytest.mark.slow
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(text=damaged(POLICY_DOCUMENT))
def test_damaged_thresholds_files_are_accepted_or_refused_in_one_line(tmp_path_factory, text: str):
    work = tmp_path_factory.mktemp("policy")
    run = work / "run.json"
    results.save(make_results(seed=1, n=12), run)
    policy = work / "thresholds.yaml"
    policy.write_text(text)  # JSON is YAML
    result = CliRunner().invoke(perfbot, ["compare", str(run), str(run), "--thresholds", str(policy)])
    assert result.exit_code in (0, 2), (result.output, result.exception)
    if result.exit_code == 2:
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("perfbot: error: "), result.stderr
    assert "Traceback" not in result.output and os.path.exists(run)


def test_the_documented_limits_are_the_enforced_ones():
    from perfbot.records import schema

    text = (ROOT / "docs" / "files.md").read_text()
    documented = {
        f"| {schema.MAX_JSON_BYTES // 2**20} MiB |": "MAX_JSON_BYTES",
        f"| {schema.MAX_YAML_BYTES // 2**20} MiB |": "MAX_YAML_BYTES",
        f"| samples per benchmark | {schema.MAX_SAMPLES:,} |": "MAX_SAMPLES",
        f"per file | {schema.MAX_ITEMS:,} |": "MAX_ITEMS",
        f"| {schema.MIN_MS:g} ms to {schema.MAX_MS:g} ms, finite |": "MIN_MS, MAX_MS",
        f"| {schema.MAX_NAME} characters, no control characters |": "MAX_NAME",
        f"| {schema.MAX_TEXT:,} characters, no control characters |": "MAX_TEXT",
        "| 1 to 2^40 |": "MAX_DIM",
    }
    assert schema.MAX_DIM == 2**40
    for line, name in documented.items():
        assert line in text, f"docs/files.md does not state {name} as enforced: {line}"


# --- error lines stay short ---------------------------------------------------------------


def _many_names(tmp_path: Path, count: int) -> Path:
    run = make_results(seed=1)
    first = run.benchmarks[0]
    names = [replace(first, kernel=f"impl-{i:05d}-" + "n" * 180) for i in range(count)]
    path = tmp_path / "many.json"
    results.save(replace(run, benchmarks=names), path)
    return path


def test_a_file_with_many_names_gives_a_short_error_line(tmp_path: Path):
    from perfbot.cli import MAX_LINE

    result = CliRunner().invoke(perfbot, ["show", str(_many_names(tmp_path, 3000)), "--by-case", "nope"])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and len(result.stderr) <= MAX_LINE + 1, len(result.stderr)
    assert "the results have no benchmark of 'nope'; they have impl-00000-" in result.stderr
    assert result.stderr.rstrip().endswith(" and 2995 more"), result.stderr[-80:]


def test_any_error_line_is_cut_at_the_limit_and_stays_one_line(tmp_path: Path):
    from perfbot.cli import MAX_LINE

    path = tmp_path / "run.json"
    results.save(make_results(seed=1), path)
    asked = "x\n" * 3000  # a name given on the command line goes into the message as it is
    result = CliRunner().invoke(perfbot, ["show", str(path), "--by-case", asked])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and len(result.stderr) == MAX_LINE + 1
    assert result.stderr.startswith("perfbot: error: the results have no benchmark of") and " ... " in result.stderr
    assert result.stderr.endswith("x\\n'; they have eager, fused, gemm\n")  # the end, which says why, is kept
    usage = CliRunner().invoke(perfbot, ["show", str(path), "--bogus" + "y" * 5000])
    assert usage.exit_code == 2 and usage.stderr.count("\n") == 1 and len(usage.stderr) == MAX_LINE + 1
    assert usage.stderr.startswith("perfbot: error: No such option")


# --- property-based: arbitrary arguments are taken or refused in one line -----------------

# What a command line can carry: any text but NUL (argv cannot hold it) and lone surrogates.
ARG_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=30
) | st.sampled_from(
    ["soft[/]max[bold]", "[red]x[/red]", "-", "--", "..", "/", "~", "x" * 3000, "@all", "<!--", "a=b", "fused"]
)
ARG_INT = (
    st.integers(-(2**80), 2**80) | st.sampled_from([0, -1, 1, 9, 10, 2**32 - 1, 2**32, 2**63, 2**70, 10**40])
).map(str)
ARG_NUMBER = ARG_INT | st.sampled_from(["nan", "inf", "-inf", "1e309", "0.5", "1e-300", "0x10", ""])


@st.composite
def command_lines(draw, files: dict[str, str]) -> list[str]:
    """One of the commands that need no GPU and no git, its arguments drawn: the real files
    (a results file, the store, the thresholds, an output place) or odd text and numbers."""

    def path(kind: str) -> str:
        return files[kind] if draw(st.booleans()) else str(Path(files["tmp"]) / draw(ARG_TEXT).replace("\x00", ""))

    def maybe(*args: str) -> list[str]:
        return list(args) if draw(st.booleans()) else []

    run, out = files["run"], str(Path(files["tmp"]) / f"out-{draw(st.integers(0, 10**9))}")
    choice = draw(st.sampled_from(["show", "compare", "export", "suites", "history", "run", "numbers"]))
    if choice == "show":
        return ["show", path("run"), *maybe("--markdown"), *maybe("--by-case", draw(ARG_TEXT))]
    if choice == "compare":
        return ["compare", path("run"), run, "--thresholds", path("thresholds"), *maybe("--out-markdown", out + ".md")]
    if choice == "export":
        return ["export", path("run"), "--out", out, *maybe("--format", draw(ARG_TEXT)), *maybe("--overwrite")]
    if choice == "suites":
        return ["suites", "--project", path("project")]
    if choice == "history":
        return ["history", "--store", path("store"), *maybe("--repo-url", draw(ARG_TEXT)), *maybe("--out-html", out)]
    if choice == "run":  # refused before measuring: an unknown suite, or a bad number first
        numbers = [
            part for option in ("--samples", "--seed", "--warmup", "--gpus") for part in maybe(option, draw(ARG_INT))
        ]
        return ["run", "--project", files["project"], *numbers, "--suite", "no-such-suite"]
    option = draw(st.sampled_from(["--alpha", "--min-slowdown", "--max-rounds", "--max-probes", "--samples"]))
    return [
        "bisect",
        "--repo",
        files["tmp"],
        "--good",
        "a",
        "--bad",
        "b",
        "--measure",
        "true",
        option,
        draw(ARG_NUMBER),
    ]


@pytest.fixture(scope="module")
def cli_files(tmp_path_factory) -> dict[str, str]:
    import shutil

    work = tmp_path_factory.mktemp("cli")
    run = work / "run.json"
    results.save(make_results(seed=1), run)
    project = work / "project"
    project.mkdir()
    for name in ("pyproject.toml", "thresholds.yaml"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "kernels", project / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    assert CliRunner().invoke(perfbot, ["baseline", "update", str(run), "--store", str(work / "store")]).exit_code == 0
    return {
        "tmp": str(work),
        "run": str(run),
        "store": str(work / "store"),
        "thresholds": str(ROOT / "thresholds.yaml"),
        "project": str(project),
    }


@pytest.mark.slow
@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(data=st.data())
def test_arbitrary_arguments_are_taken_or_refused_in_one_short_line(cli_files: dict[str, str], data):
    from perfbot.cli import MAX_LINE

    argv = data.draw(command_lines(cli_files))
    result = CliRunner().invoke(perfbot, argv)
    assert result.exit_code in (0, 2, 3), (argv, result.output, result.exception)  # never 1: nothing got slower
    assert result.exception is None or isinstance(result.exception, SystemExit), (argv, result.exception)
    assert "Traceback" not in result.output
    if result.exit_code != 0:
        assert result.stderr.startswith("perfbot: error: ") and result.stderr.count("\n") == 1, (argv, result.stderr)
        assert len(result.stderr) <= MAX_LINE + 1
        assert "internal error" not in result.stderr, (argv, result.stderr)  # 3 only where the machine failed


@pytest.mark.parametrize(
    "args", [["show", "{long}"], ["suites", "--project", "{long}"], ["compare", "{long}", "{long}"]]
)
def test_a_name_too_long_for_the_system_is_refused_in_one_line(tmp_path: Path, args: list[str]):
    long = str(tmp_path / ("x" * 3000))  # ENAMETOOLONG from the first stat, found by the property above
    result = CliRunner().invoke(perfbot, [a.format(long=long) for a in args])
    assert result.exit_code == 2, result.output
    assert "File name too long" in result.stderr and result.stderr.count("\n") == 1
