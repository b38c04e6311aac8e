"""A subject that quits, hangs or lies: every call perfbot makes into its code (the import, inputs,
references, implementations, counts, config readers) goes through one guard (perfbot/loading/guard.py).
A subject that calls sys.exit, raises a BaseException, outlasts its time limit or returns a
reference that cannot be trusted is refused in one line naming it (exit 2): never a silent pass
(exit 0), and never exit 1, which means a slowdown or a wrong result of a kernel."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perfbot.cli import perfbot
from perfbot.loading import guard
from tests.conftest import ROOT, quick_first

PYPROJECT = '[tool.perfbot]\ntriton-commit = "7c56a5e40f7fd928dfd5c72902d5def0097db73a"\nkernels = "pk"\n'

# A subject of two implementations on one small case; each {part} is code put in its place.
SUBJECT = """
import sys, time
import torch
from perfbot import Case, Subject, Suite

class Quit(BaseException):
    pass

def inputs(case, generator):
    {inputs}
    return (torch.randn(case.n, generator=generator),)

def reference(x):
    {reference}
    return x.double() * 2

def own_reference(x):
    {own_reference}
    return x.double() * 2

CASES = (Case({suite!r}, {case!r}, {{"n": 8}}, "float32"),)

def flops(case):
    {flops}
    return case.n

def config(x):
    {config}
    return {{"block": 8}}

subject = Subject(
    {name!r}, inputs, reference, {{"float32": 1e-5}}, flops=flops,
    suites={{{suite!r}: Suite({suite!r}, "", ({mine!r}, "other"), CASES)}},
)

@subject.implementation({mine!r}, under_test=True, config=config)
def mine(x):
    {mine_body}
    return x * 2

@subject.implementation("other", reference=own_reference)
def other(x):
    {other_body}
    return x * 2

{at_import}
"""


def _project(tmp_path: Path, **parts: str) -> Path:
    """A project whose subject is SUBJECT with the given parts (code, or names)."""
    fields = {
        "inputs": "pass",
        "reference": "pass",
        "own_reference": "pass",
        "flops": "pass",
        "config": "pass",
        "mine_body": "pass",
        "other_body": "pass",
        "at_import": "",
        "name": "t",
        "suite": "quick",
        "case": "c",
        "mine": "mine",
        **parts,
    }
    (tmp_path / "pk").mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    (tmp_path / "pk" / "__init__.py").write_text(SUBJECT.format(**fields))
    return tmp_path


def _check(project: Path, *args: str):
    return CliRunner().invoke(perfbot, ["check", "--project", str(project), *args])


def _one_line(stderr: str) -> str:
    """The one error line (the progress display leaves a blank line before it)."""
    line = stderr.strip()
    assert "\n" not in line and line.startswith("perfbot: error: ") and len(line) < 600, stderr
    return line


def test_a_subject_that_behaves_passes(tmp_path: Path):
    """The baseline of every case below: the same subject, unbroken, is right (exit 0)."""
    done = _check(_project(tmp_path))
    assert done.exit_code == 0, done.output
    assert "2 right, 0 wrong, of 2" in done.output


# --- quitting: sys.exit, SystemExit, any BaseException but the user's Ctrl-C ---


@pytest.mark.parametrize(
    "part,code,words",
    [
        ("mine_body", "sys.exit(0)", "subject 't': implementation 'mine' (case quick/c) called sys.exit(0)"),
        ("mine_body", "sys.exit(1)", "implementation 'mine' (case quick/c) called sys.exit(1)"),
        ("mine_body", "sys.exit()", "implementation 'mine' (case quick/c) called sys.exit()"),
        ("mine_body", "raise SystemExit('bye')", "implementation 'mine' (case quick/c) called sys.exit('bye')"),
        ("mine_body", "raise Quit('gone')", "implementation 'mine' (case quick/c) raised Quit: gone"),
        ("other_body", "raise GeneratorExit", "implementation 'other' (case quick/c) raised GeneratorExit"),
        ("inputs", "sys.exit(1)", "subject 't': inputs(case quick/c) called sys.exit(1)"),
        ("inputs", "sys.exit(0)", "subject 't': inputs(case quick/c) called sys.exit(0)"),
        ("reference", "sys.exit(0)", "subject 't': the reference (case quick/c) called sys.exit(0)"),
        ("own_reference", "sys.exit(1)", "subject 't': other's own reference (case quick/c) called sys.exit(1)"),
        ("config", "sys.exit(0)", "implementation 'mine' (case quick/c): config called sys.exit(0)"),
        ("at_import", "sys.exit(0)", "pk: importing the package called sys.exit(0)"),
    ],
)
def test_a_subject_that_quits_is_refused_in_one_line(tmp_path: Path, part: str, code: str, words: str):
    done = _check(_project(tmp_path, **{part: code}))
    assert done.exit_code == 2, done.output
    assert words in _one_line(done.stderr)


def test_a_counts_function_that_quits_or_fails_is_refused_in_a_run(gpu, tmp_path: Path):
    """Counts are called only when a benchmark is recorded, after it is timed: a measuring
    command refuses them too (it was an internal error, exit 3, or a silent exit 0)."""
    for index, (code, words) in enumerate(
        [
            ("sys.exit(0)", "subject 't': flops of mine (case quick/c) called sys.exit(0)"),
            ("raise ValueError('no')", "subject 't': flops of mine (case quick/c) raised ValueError: no"),
            ("return float('nan')", "flops of mine (case quick/c) must be a number of at least 0, got nan"),
            ("return 'many'", "flops of mine (case quick/c) must be a number of at least 0, got 'many'"),
        ]
    ):
        project = _project(tmp_path / str(index), flops=code)
        done = CliRunner().invoke(perfbot, ["run", "--project", str(project), "--suite", "quick", "--samples", "10"])
        assert done.exit_code == 2, done.output
        assert words in _one_line(done.stderr)


def test_an_implementation_that_quits_when_captured_is_refused(gpu, tmp_path: Path):
    """Checked once, it returns; called again for its CUDA graph (the warm-up), it quits: the
    capture's calls go through the guard too, not only the check's."""
    body = "mine.calls = getattr(mine, 'calls', 0) + 1\n    if mine.calls > 1: sys.exit(0)"
    project = _project(tmp_path, mine_body=body)
    done = CliRunner().invoke(perfbot, ["run", "--project", str(project), "--suite", "quick", "--samples", "10"])
    assert done.exit_code == 2, done.output
    assert "implementation 'mine' (case quick/c) called sys.exit(0)" in _one_line(done.stderr)


def test_an_implementation_that_raises_is_still_its_own_wrong_result(tmp_path: Path):
    """An ordinary exception is one implementation's failure (exit 1, the others checked), as
    before: only quitting is the subject's refusal."""
    done = _check(_project(tmp_path, mine_body="raise RuntimeError('bad launch')"))
    assert done.exit_code == 1, done.output
    assert "raised RuntimeError: bad launch" in done.output and "1 right, 1 wrong, of 2" in done.output


@pytest.mark.parametrize(
    "part,words",
    [
        ("at_import", "pk: importing the package raised KeyboardInterrupt"),
        ("mine_body", "subject 't': implementation 'mine' (case quick/c) raised KeyboardInterrupt"),
        ("inputs", "subject 't': inputs(case quick/c) raised KeyboardInterrupt"),
        ("reference", "subject 't': the reference (case quick/c) raised KeyboardInterrupt"),
    ],
)
def test_a_keyboard_interrupt_the_subject_raises_is_refused(tmp_path: Path, part: str, words: str):
    """A KeyboardInterrupt that no Ctrl-C caused is the subject quitting: refused, exit 2, never the
    130 of a user's Ctrl-C (nor a child's death by SIGINT)."""
    done = _check(_project(tmp_path, **{part: "raise KeyboardInterrupt"}))
    assert done.exit_code == 2, done.output
    assert words in _one_line(done.stderr)


def test_a_ctrl_c_during_a_guarded_call_passes_through_and_a_raised_one_is_refused():
    """The guard tells them apart by whether a SIGINT reached the process during the call, whatever
    handler was in place (Python's own here; pytest-xdist's workers may ignore SIGINT)."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            guard.call("x", _ctrl_c, 5.0)
        with pytest.raises(KeyboardInterrupt):
            guard.call("outer", lambda: guard.call("inner", _ctrl_c))  # nested: the outer's count
        with pytest.raises(guard.Refused, match=r"^x raised KeyboardInterrupt: by hand$"):
            guard.call("x", _interrupt, 5.0)
        with pytest.raises(guard.Refused, match=r"^inner raised KeyboardInterrupt"):
            guard.call("outer", lambda: guard.call("inner", _interrupt))
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back after each call
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a subject's process: no Ctrl-C can raise it
        with pytest.raises(guard.Refused, match=r"^x raised KeyboardInterrupt"):
            guard.call("x", _interrupt, 5.0)
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupt() -> None:
    raise KeyboardInterrupt("by hand")


def _ctrl_c() -> None:
    """A SIGINT, as Ctrl-C sends it; Python's handler raises KeyboardInterrupt at once."""
    import signal

    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
    raise AssertionError("no KeyboardInterrupt came")


# --- a reference that cannot be trusted ---


@pytest.mark.parametrize(
    "part,code,words",
    [
        ("reference", "return x.double() * float('nan')", "the reference (case quick/c) returned a non-finite value"),
        ("reference", "return torch.full((8,), float('inf'))", "in 8 of 8 elements"),
        ("reference", "y = x.double(); y[3] = -float('inf'); return y", "in 1 of 8 elements"),
        ("own_reference", "y = x.double(); y[0] = float('nan'); return y", "other's own reference (case quick/c)"),
        ("reference", "return [1.0] * 8", "the reference (case quick/c) returned a list, not a tensor"),
        ("inputs", "return torch.ones(8)", "subject 't': inputs(case quick/c) returned a Tensor, not a tuple"),
    ],
)
def test_a_reference_that_is_not_finite_is_the_subjects_mistake(tmp_path: Path, part: str, code: str, words: str):
    """Against a NaN or an infinity every output is wrong: blamed on the reference (exit 2), not
    on every kernel (exit 1)."""
    done = _check(_project(tmp_path, **{part: code}))
    assert done.exit_code == 2, done.output
    line = _one_line(done.stderr)
    assert words in line and "subject 't'" in line
    assert ("no result can be checked against it" in line) == (part != "inputs")


def test_a_nan_output_is_the_kernels_wrong_result(tmp_path: Path):
    """The other side of the rule: a kernel whose own output holds a NaN, against a finite
    reference, is that kernel's wrong result (exit 1), the other one right."""
    done = _check(_project(tmp_path, mine_body="return x * float('nan')"))
    assert done.exit_code == 1, done.output
    assert "1 right, 1 wrong, of 2" in done.output and "wrong result" in done.output


def test_a_nan_output_is_a_wrong_result_in_a_measured_run_too(gpu, tmp_path: Path):
    """Measured, the failure crosses from the worker as JSON, which holds no NaN: its relative
    error goes as none, and the row is the kernel's wrong result (exit 1), not a refusal of the
    worker's answer (exit 2). A lazy output read as plain, uninitialised memory hit this."""
    project = _project(tmp_path, mine_body="return x * float('nan')")
    done = CliRunner().invoke(perfbot, ["run", "--project", str(project), "--suite", "quick", "--samples", "10"])
    assert done.exit_code == 1, done.output
    assert "wrong result" in done.output and "not JSON" not in done.output


# --- time limits ---

SWALLOWS = "while True:\n        try:\n            time.sleep(100)\n        except BaseException:\n            pass"


@pytest.mark.parametrize(
    "part,code,words",
    quick_first(
        3,
        [
            ("mine_body", "time.sleep(1000)", "subject 't': implementation 'mine' (case quick/c) did not finish"),
            ("inputs", "while True: pass", "subject 't': inputs(case quick/c) did not finish"),
            ("reference", "time.sleep(1000)", "subject 't': the reference (case quick/c) did not finish"),
            ("config", "time.sleep(1000)", "implementation 'mine' (case quick/c): config did not finish"),
            ("at_import", "time.sleep(1000)", "pk: importing the package did not finish"),
            ("at_import", "while True: pass", "pk: importing the package did not finish"),
            # caught once, then returned: refused all the same
            (
                "other_body",
                "try: time.sleep(100)\n    except BaseException: pass",
                "implementation 'other' (case quick/c)",
            ),
            ("reference", "try: time.sleep(100)\n    except BaseException: raise ValueError", "the reference (case"),
        ],
    ),
)
def test_a_subject_that_hangs_is_refused_at_the_limit(tmp_path: Path, part: str, code: str, words: str):
    started = time.monotonic()
    done = _check(_project(tmp_path, **{part: code}), "--time-limit", "0.5")
    assert done.exit_code == 2, done.output
    line = _one_line(done.stderr)
    assert words in line and "within its time limit of 0.5 s" in line
    assert time.monotonic() - started < 20


def test_a_call_within_its_limit_is_not_refused(tmp_path: Path):
    """The other side of the limit: a slow call that finishes in time is checked as any other."""
    done = _check(_project(tmp_path, mine_body="time.sleep(0.3)", at_import="time.sleep(0.3)"), "--time-limit", "3")
    assert done.exit_code == 0, done.output


@pytest.mark.parametrize(
    "part,words",
    [("at_import", "pk: importing the package did not finish"), ("mine_body", "implementation 'mine' (case")],
)
def test_a_subject_that_swallows_the_limit_is_ended_by_the_watchdog(tmp_path: Path, part: str, words: str):
    """Code that catches the limit's exception and goes on cannot be stopped in its thread: the
    watchdog says the one line and ends the process it runs in, the subject's (exit 2), a grace
    period after the limit; perfbot's refuses the subject with that line, exit 2. The subject's
    process is a fork of this one, so the check runs here (the watchdog never runs in perfbot's)."""
    project = _project(tmp_path, **{part: SWALLOWS})
    started = time.monotonic()
    done = _check(project, "--time-limit", "0.5")
    assert done.exit_code == 2, done.output
    assert words in _one_line(done.stderr) and "within its time limit of 0.5 s" in done.stderr
    assert time.monotonic() - started < 60


def test_every_command_limits_the_import(tmp_path: Path, monkeypatch):
    """Not only check: wherever a subject is loaded (here `perfbot suites`), its import is limited,
    by guard.IMPORT_LIMIT_S."""
    monkeypatch.setattr(guard, "IMPORT_LIMIT_S", 0.5)
    project = _project(tmp_path, at_import="time.sleep(1000)")
    done = CliRunner().invoke(perfbot, ["suites", "--project", str(project)])
    assert done.exit_code == 2, done.output
    assert "pk: importing the package did not finish within its time limit of 0.5 s" in _one_line(done.stderr)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "86401", "soon"])
def test_a_time_limit_that_is_not_a_positive_number_of_seconds_is_refused(tmp_path: Path, value: str):
    done = _check(_project(tmp_path), "--time-limit", value)
    assert done.exit_code == 2 and "--time-limit" in done.output, done.output


def test_the_guard_restores_the_signal_handler_and_nests(monkeypatch):
    import signal

    def mine(signum, frame):
        pass

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        assert guard.call("outer", lambda: guard.call("inner", lambda: 5, 0.2), 2.0) == 5
        assert signal.getsignal(signal.SIGALRM) is mine and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
        with pytest.raises(guard.Refused, match=r"^outer did not finish"):  # the outer limit holds inside
            guard.call("outer", lambda: guard.call("inner", lambda: time.sleep(5), 10.0), 0.3)
        assert signal.getsignal(signal.SIGALRM) is mine
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_the_defaults_are_the_documented_ones():
    text = " ".join((ROOT / "docs" / "subject.md").read_text().split())  # as read, whatever the line breaks
    assert f"Importing the subject may take {guard.IMPORT_LIMIT_S:g} s at most" in text
    assert f"each call into it may take {guard.CALL_LIMIT_S:g} s at most" in text
    assert (
        guard.MEASURED_CALL_LIMIT_S == 3600
        and "(`run`, `sample`, `ab`, and `bisect` through `sample`) give each call an hour" in text
    )
    assert f"(as long as the limit, {guard.MOST_GRACE_S:g} s at most)" in text
    assert "`perfbot check --time-limit SECONDS` sets both (up to a day)" in text


@pytest.mark.parametrize("limit,waits", [(0.5, 0.5), (3.0, 3.0), (10.0, 10.0), (600.0, 10.0), (86_400.0, 10.0)])
def test_the_grace_is_as_long_as_the_limit_10_s_at_most(limit: float, waits: float):
    """The watchdog ends the process this long after a limit; never sooner than a short limit's
    own length, never later than 10 s after it."""
    assert guard.grace(limit) == waits


# --- names: markup printed as it is; what no report could hold refused at load ---

MARKUP = {"name": "soft[/]max[bold]", "suite": "q[/]uick", "case": "c[red]", "mine": "mi[/]ne[link=x]"}


def test_names_holding_rich_markup_are_printed_as_they_are(tmp_path: Path):
    """`soft[/]max[bold]` is a valid name (docs/files.md): the terminal table, its title and the
    progress line print it literally (it crashed the table: exit 3)."""
    done = _check(_project(tmp_path, **MARKUP), "--suite", "q[/]uick")
    assert done.exit_code == 0, done.output
    assert "perfbot check: soft[/]max[bold] on cpu" in done.output
    assert "│ q[/]uick │ c[red] │ float32 │ mi[/]ne[link=x] │" in done.output


def test_names_holding_rich_markup_in_a_wrong_result_and_a_run(gpu, tmp_path: Path):
    wrong = _check(_project(tmp_path / "wrong", **MARKUP, mine_body="return x"), "--suite", "q[/]uick")
    assert wrong.exit_code == 1, wrong.output
    assert "mi[/]ne[link=x]" in wrong.output and "wrong result" in wrong.output
    out = tmp_path / "out[/]put[bold].json"
    project = _project(tmp_path / "run", **MARKUP)
    run = CliRunner().invoke(
        perfbot, ["run", "--project", str(project), "--suite", "q[/]uick", "--samples", "10", "--out", str(out)]
    )
    assert run.exit_code == 0, run.output
    assert "mi[/]ne[link=x]" in run.output and f"results written to {out}" in run.output.replace("\n", "")


@pytest.mark.parametrize(
    "parts,words",
    [
        ({"name": "a\nb"}, "the subject's name must be a string of 1 to 200 characters, no control characters"),
        ({"name": "x" * 201}, "the subject's name must be a string of 1 to 200"),
        ({"name": ""}, "the subject's name must be a string of 1 to 200"),
        ({"mine": "tab\there"}, "an implementation's name must be a string of 1 to 200"),
        ({"suite": "q\x1b[31m"}, "a suite's name must be a string of 1 to 200"),
        ({"case": "c" * 300}, "a case's name must be a string of 1 to 200"),
    ],
)
def test_names_no_record_could_hold_are_refused_at_load(tmp_path: Path, parts: dict, words: str):
    """Names given in Python meet the rule the YAML files' names meet: refused in one line, the
    value shown short, not a failure in the middle of a run."""
    done = _check(_project(tmp_path, **parts))
    assert done.exit_code == 2, done.output
    assert words in _one_line(done.stderr)


def test_a_name_of_200_characters_is_a_name(tmp_path: Path):
    done = _check(_project(tmp_path, case="c" * 200))
    assert done.exit_code == 0, done.output


# --- property: any declaration loads, or is refused in one line ---

NAMES = st.text(max_size=8) | st.sampled_from(["quick", "a[/]b", "x" * 201, "a\nb", "c", "float32"])
VALUES = st.one_of(
    NAMES.map(repr),
    st.integers(-3, 2**41).map(repr),
    st.sampled_from(["None", "True", "1.5", "float('nan')", "float('inf')", "10**5000", "[]", "()", "{}", "object()"]),
)


def _tuple(items: list[str]) -> str:
    return "(" + "".join(f"{item}, " for item in items) + ")"


AT_IMPORT = [
    "sys.exit(0)",
    "sys.exit(1)",
    "raise SystemExit('x' * 5000)",
    "raise Quit()",
    "1/0",
    "raise ValueError('a\\nb' * 3000)",
    "import not_a_module_anywhere",
    "subject = 5",
    "del subject",
    "subject.implementations = 5",
    "subject.implementations['mine'] = 5",
]


def _dict(keys: st.SearchStrategy[str], values: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.dictionaries(keys, values, max_size=3).map(
        lambda d: "{" + "".join(f"{k}: {v}, " for k, v in d.items()) + "}"
    )


# Each part of a subject's source: its right form first, then what may be drawn instead.
PARTS: dict[str, tuple[str, st.SearchStrategy[str]]] = {
    "name": ("'t'", VALUES),
    "inputs": ("lambda c, g: ()", st.sampled_from(["5", "None", "len"])),
    "reference": ("lambda *a, **k: 0", st.sampled_from(["5", "None"])),
    "tolerance": ("{'float32': 1e-5}", _dict(NAMES.map(repr), VALUES | st.just("1e-3")) | VALUES),
    "variants": (
        "{'v': ('a', 'b')}",
        _dict(NAMES.map(repr), st.lists(VALUES, max_size=3).map(_tuple) | VALUES) | VALUES,
    ),
    "flops": ("None", st.sampled_from(["len", "3", "'x'"])),
    "default_case": ("None", st.sampled_from(["('s', 'c')", "(1, 2)", "'nope'", "('s',)", "('s', 'zz')", "[]"])),
    "suites": ("{'s': SUITE}", st.sampled_from(["'nope.yaml'", "{5: SUITE}", "{'t': SUITE}", "[SUITE]"]) | VALUES),
    "suite": ("'s'", VALUES),
    "about": ("''", VALUES),
    "timed": ("('mine', 'other')", st.lists(VALUES, max_size=2).map(_tuple) | VALUES),
    "case": ("'c'", VALUES),
    "params": ("{'n': 8}", _dict(NAMES.map(repr), VALUES) | VALUES),
    "dtype": ("'float32'", VALUES),
    "mine": ("'mine'", VALUES),
    "takes": ("None", st.sampled_from(["()", "('v',)", "('w',)", "'v'", "5"])),
    "at_import": ("", st.sampled_from(AT_IMPORT)),
}


@st.composite
def declarations(draw) -> str:
    """The source of a subject package, right but for up to three parts drawn wrong or absurd."""
    part = {name: good for name, (good, _) in PARTS.items()}
    for name in draw(st.lists(st.sampled_from(sorted(PARTS)), max_size=3, unique=True)):
        part[name] = draw(PARTS[name][1])
    case = f"Case('s', {part['case']}, {part['params']}, {part['dtype']})"
    suite = f"Suite({part['suite']}, {part['about']}, {part['timed']}, ({case},))"
    fields = ["name", "inputs", "reference", "tolerance", "suites", "variants", "default_case", "flops"]
    declared = ", ".join(f"{field}={part[field].replace('SUITE', suite)}" for field in fields)
    return (
        "import sys\nfrom perfbot import Case, Subject, Suite\n\nclass Quit(BaseException):\n    pass\n\n"
        f"subject = Subject({declared})\n"
        f"subject.implementation({part['mine']}, under_test=True, variants={part['takes']})(lambda *a, **k: 0)\n"
        f"subject.implementation('other')(lambda *a, **k: 0)\n{part['at_import']}\n"
    )


@pytest.mark.slow
@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(source=declarations())
def test_any_declaration_loads_or_is_refused_in_one_line(tmp_path_factory, source: str):
    from perfbot.errors import BadInput
    from perfbot.loading.package import load_subject

    package = tmp_path_factory.mktemp("declared") / "pk"
    package.mkdir()
    (package / "__init__.py").write_text(source)
    try:
        loaded = load_subject(package)
    except BadInput as error:
        line = str(error)
        assert "\n" not in line and "\r" not in line, line
        assert len(line) <= len(str(package)) + 600, line
    else:
        assert loaded.suites and loaded.implementations


def test_a_suites_name_with_a_line_break_is_refused_in_one_line(tmp_path: Path):
    """Found by the property above: the name went into the file's messages, line break and all."""
    from perfbot.errors import BadInput
    from perfbot.loading.package import load_subject

    package = tmp_path / "pk"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from perfbot import Subject\n"
        "subject = Subject('t', lambda c, g: (), lambda *a: 0, {'float32': 1e-5}, suites='a\\nb')\n"
        "subject.implementation('mine', under_test=True)(lambda *a: 0)\n"
    )
    with pytest.raises(BadInput, match="without control characters") as error:
        load_subject(package)
    assert "\n" not in str(error.value)
