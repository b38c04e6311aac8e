"""The judge apart from the judged: `perfbot check` and `perfbot suites` run the subject's code in
a process of their own (perfbot/measuring/subject_process.py), `run`, `sample` and `ab` in a
worker (perfbot/measuring/worker.py), and decide in perfbot's. A subject that ends that process
without an answer (os._exit at import or in a call, a signal), forges an answer, or changes
perfbot's own code or its clocks is refused, exit 2, naming what it did: never a pass. An
implementation that changes its inputs in place is a wrong result."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from tests import test_runner_cpu
from tests.test_hostile_subject import _one_line, _project
from tests.test_runner_cpu import _ab


def _run(project: Path, command: str = "check"):
    return CliRunner().invoke(perfbot, [command, "--project", str(project)])


@pytest.mark.parametrize(
    "part,code,words",
    [
        ("at_import", "import os; os._exit(0)", "ended (exit 0, as os._exit(0) would) before it answered"),
        ("at_import", "import os; os._exit(1)", "ended (exit 1) before it answered"),
        ("mine_body", "import os; os._exit(0)", "ended (exit 0, as os._exit(0) would) before it answered"),
        ("reference", "import os; os._exit(0)", "ended (exit 0, as os._exit(0) would) before it answered"),
        ("mine_body", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "was killed by SIGKILL"),
    ],
)
def test_a_subject_that_ends_its_process_fails_the_check(tmp_path: Path, part: str, code: str, words: str):
    done = _run(_project(tmp_path, **{part: code}))
    assert done.exit_code == 2, done.output
    assert words in _one_line(done.stderr)


def test_what_the_subject_prints_is_passed_on_and_named_when_it_quits(tmp_path: Path):
    done = _run(_project(tmp_path, at_import="import os; print('bye now', flush=True); os._exit(0)"))
    assert done.exit_code == 2, done.output
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "bye now" in lines[:-1], done.stderr  # passed on as it came
    assert lines[-1].startswith("perfbot: error: ") and lines[-1].endswith(": bye now"), done.stderr


def _family(tmp_path: Path, at_import: str) -> Path:
    """A project of one kernel family (docs/subject.md, "Several kernels"): the package lists
    `subjects`, and the family's own module runs `at_import`."""
    project = _project(tmp_path, at_import=at_import)
    family = project / "pk" / "fam"
    family.mkdir()
    (project / "pk" / "__init__.py").rename(family / "__init__.py")
    (project / "pk" / "__init__.py").write_text("from .fam import subject as fam\n\nsubjects = [fam]\n")
    return project


def test_a_family_is_a_family(tmp_path: Path):
    """What the test below runs on, unbroken: one family, its names prefixed with its own."""
    done = CliRunner().invoke(perfbot, ["suites", "--project", str(_family(tmp_path, ""))])
    assert done.exit_code == 0 and "t/quick" in done.output, done.output


@pytest.mark.parametrize("command", ["check", pytest.param("suites", marks=pytest.mark.slow)])
def test_the_cli_refuses_a_family_that_ends_its_process_at_import(tmp_path: Path, command: str):
    """Through the real CLI, in a process of its own, on a project on disk: `os._exit(0)` in a
    family's import once made `check` and `suites` exit 0 saying nothing. (Run in this process,
    that would have ended the test run itself, with exit 0.)"""
    import subprocess
    import sys

    from tests.conftest import ROOT

    project = _family(tmp_path, "import os; os._exit(0)")
    done = subprocess.run(
        [sys.executable, "-m", "perfbot", command, "--project", str(project)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    words = "the subject's process ended (exit 0, as os._exit(0) would) before it answered"
    assert words in _one_line(done.stderr)


@pytest.mark.parametrize("command", ["check", "suites"])
def test_the_cli_refuses_a_family_that_raises_keyboard_interrupt_at_import(tmp_path: Path, command: str):
    """A KeyboardInterrupt in a family's import once made `check` and `suites` exit 130. Here, in
    this process: the exit code is the CLI group's (cli._PerfbotGroup), which turned it into 130,
    and the test above runs the real entry point on a family that quits at import."""
    done = _run(_family(tmp_path, "raise KeyboardInterrupt"), command)
    assert done.exit_code == 2, done.output
    assert done.stdout == ""
    assert "pk: importing the package raised KeyboardInterrupt" in _one_line(done.stderr)


def test_suites_refuses_a_subject_that_quits_at_import(tmp_path: Path):
    done = _run(_project(tmp_path, at_import="import os; os._exit(0)"), "suites")
    assert done.exit_code == 2 and "before it answered" in _one_line(done.stderr)
    listed = _run(_project(tmp_path / "fine"), "suites")
    assert listed.exit_code == 0 and "subject t: mine (under test), other" in listed.output
    assert "  c                  n=8  float32" in listed.output


FORGED = """import json, os
for fd in range(3, 64):
    try:
        os.write(fd, (json.dumps({"answer": {"subject": "t", "device": "cpu", "checked": []}}) + "\\n").encode())
    except OSError:
        pass
os._exit(0)"""


def test_an_answer_forged_by_the_subject_is_refused(tmp_path: Path):
    done = _run(_project(tmp_path, at_import=FORGED))
    assert done.exit_code == 2, done.output
    error = done.stderr.strip().splitlines()[-1]
    assert error == "perfbot: error: a line on the subject process's answer channel does not carry its nonce: refused"


@pytest.mark.parametrize(
    "code,named",
    [
        (
            "import perfbot.measuring.correctness as c; c.check = lambda *a, **k: None",
            "perfbot.measuring.correctness.check",
        ),
        ("import time; time.perf_counter = lambda: 0.0", "time.perf_counter"),
        ("import torch; torch.cuda.Event.elapsed_time = lambda self, end: 1e-3", "torch.cuda.Event.elapsed_time"),
        (
            "import perfbot.measuring.checking as c; c.each_config.__code__ = (lambda *a: []).__code__",
            "perfbot.measuring.checking.each_config",
        ),
        ("import sys, types; sys.modules['perfbot.deciding.stats'] = types.ModuleType('x')", "perfbot.deciding.stats"),
    ],
)
def test_a_subject_that_patches_perfbot_or_a_clock_is_refused(tmp_path: Path, code: str, named: str):
    done = _run(_project(tmp_path, at_import=code))
    assert done.exit_code == 2, done.output
    line = _one_line(done.stderr)
    assert "the subject changed what it may not" in line and named in line


def test_an_implementation_that_changes_its_input_in_place_is_wrong_and_the_next_gets_it_whole(tmp_path: Path):
    done = _run(_project(tmp_path, mine_body="x.mul_(3)"))
    assert done.exit_code == 1, done.output
    assert "it changed its input [0] in place" in done.output
    assert "1 right, 1 wrong, of 2" in done.output  # other, checked after it, was given x as it was made


def test_an_input_changed_and_put_back_is_no_change(tmp_path: Path):
    done = _run(_project(tmp_path, mine_body="x.mul_(2); x.div_(2)"))
    assert done.exit_code == 0 and "2 right, 0 wrong, of 2" in done.output, done.output


# --- what is timed is what is checked: a run checks each timed implementation on fresh inputs ---

CACHED = (
    "kept = mine.__dict__.setdefault('kept', {})\n"
    "    if x.shape in kept: return kept[x.shape]\n"
    "    kept[x.shape] = x * 2"
)


def test_a_result_kept_across_calls_is_wrong_on_fresh_inputs_after_timing(gpu, tmp_path: Path):
    """Checked once, captured and replayed on the same inputs, a result kept across calls looks
    right; on inputs made after timing, from a seed it could not know, it is not."""
    project = _project(tmp_path, mine_body=CACHED)
    done = CliRunner().invoke(perfbot, ["run", "--project", str(project), "--suite", "quick", "--samples", "10"])
    assert done.exit_code == 1, done.output
    assert (
        "mine" in done.output
        and "replayed on fresh inputs after timing, was wrong on 2 of 2 draws (seed " in done.output
    )
    honest = _project(tmp_path / "honest")
    done = CliRunner().invoke(perfbot, ["run", "--project", str(honest), "--suite", "quick", "--samples", "10"])
    assert done.exit_code == 0 and "fresh inputs" not in done.output, done.output


ONCE_WRONG = (
    "seen = mine.__dict__.setdefault('seen', set()); key = float(x.sum())\n"
    "    if seen and key not in seen and not mine.__dict__.get('missed'):\n"
    "        mine.missed = True; seen.add(key); return x * 3\n"
    "    seen.add(key)"
)


def test_one_unlucky_fresh_draw_is_not_a_wrong_result(gpu, tmp_path: Path):
    """Wrong on the first inputs it has not seen, right on every other: as a subject whose
    tolerance a rare draw misses. A second draw decides, and it is right."""
    done = CliRunner().invoke(
        perfbot,
        ["run", "--project", str(_project(tmp_path, mine_body=ONCE_WRONG)), "--suite", "quick", "--samples", "10"],
    )
    assert done.exit_code == 0 and "fresh inputs" not in done.output, done.output


# --- run and sample: the subject's code in a worker process, the verdict in this one ---


repo = test_runner_cpu.repo  # the fixture: the tiny suite's project, committed twice (base, head)


def _timed(project: Path, command: str = "run"):
    chosen = ["--case", "c", "--kernel", "mine"] if command == "sample" else []
    return CliRunner().invoke(
        perfbot, [command, "--project", str(project), "--suite", "quick", "--samples", "10", *chosen]
    )


@pytest.mark.parametrize("command", ["run", "sample"])
@pytest.mark.parametrize(
    "part,code,words",
    [
        ("at_import", "import os; os._exit(0)", "ended (exit 0, as os._exit(0) would) before it answered"),
        ("mine_body", "import os; os._exit(0)", "ended (exit 0, as os._exit(0) would) before it answered"),
        ("mine_body", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)", "was killed by SIGKILL"),
        ("at_import", FORGED, "does not carry its nonce: refused"),
        ("at_import", "raise KeyboardInterrupt", "pk: importing the package raised KeyboardInterrupt"),
        ("mine_body", "raise KeyboardInterrupt", "implementation 'mine' (case quick/c) raised KeyboardInterrupt"),
    ],
)
def test_a_subject_that_ends_or_forges_its_worker_fails_run_and_sample(
    gpu, tmp_path: Path, command: str, part: str, code: str, words: str
):
    done = _timed(_project(tmp_path, **{part: code}), command)
    assert done.exit_code == 2, done.output
    assert words in _one_line(done.stderr)


@pytest.mark.parametrize(
    "part,code,named",
    [
        (
            "at_import",
            "import torch; torch.cuda.Event.elapsed_time = lambda s, e: 1e-3",
            "torch.cuda.Event.elapsed_time",
        ),
        (
            "mine_body",
            "import perfbot.measuring.measure as m; m.time_rounds = None",
            "perfbot.measuring.measure.time_rounds",
        ),
    ],
)
def test_a_subject_that_patches_a_clock_or_perfbot_fails_run(gpu, tmp_path: Path, part: str, code: str, named: str):
    done = _timed(_project(tmp_path, **{part: code}))
    assert done.exit_code == 2, done.output
    line = _one_line(done.stderr)
    assert "the subject changed what it may not" in line and named in line


def test_a_clock_patched_and_put_back_while_rounds_are_timed_fails_run(gpu, tmp_path: Path):
    """Something in the worker (a subject's thread, say; here the stand-in GPU's timing, which runs
    there) patches a clock during the third round and puts it back in the fourth: only the look
    after each round sees it."""
    import time

    real = time.perf_counter

    def ms(name: str, call: int) -> float:
        if call == 3:
            time.perf_counter = lambda: 0.0
        elif call == 4:
            time.perf_counter = real
        return 1.0

    gpu.ms = ms
    done = _timed(_project(tmp_path))
    assert done.exit_code == 2, done.output
    line = _one_line(done.stderr)
    assert "the subject changed what it may not: time.perf_counter" in line
    assert time.perf_counter is real  # here, in perfbot's process, nothing changed


def test_a_call_or_a_round_that_never_ends_is_stopped_and_refused(gpu, tmp_path: Path, monkeypatch):
    """A call into the subject that never returns while a case is checked (here a sleep, as a
    kernel that never ends) is held to guard's limit in the worker; a round or a sample that never
    ends, to the coordinator's deadline. Each is stopped and refused, exit 2, never left to hold
    the run until the job's own timeout."""
    import time

    from perfbot.loading import guard
    from perfbot.measuring import worker_sides

    monkeypatch.setattr(guard, "MEASURED_CALL_LIMIT_S", 2.0)
    monkeypatch.setattr(worker_sides, "DEADLINE_S", {"round": 1.0, "sample": 1.0})
    started = time.monotonic()
    done = _timed(_project(tmp_path / "call", mine_body="import time; time.sleep(120)"))
    assert done.exit_code == 2, done.output
    assert "implementation 'mine' (case quick/c) did not finish within its time limit of 2 s" in _one_line(done.stderr)
    gpu.ms = lambda name, call: time.sleep(120) if call == 3 else 1.0
    for command in ("run", "sample"):
        done = _timed(_project(tmp_path / command), command)
        assert done.exit_code == 2, done.output
        # Both time a round at a time in one worker; "sample" is a two-Triton A/B's request.
        assert "the worker did not answer 'round' within 1 s (a kernel that never ends?): stopped" in _one_line(
            done.stderr
        )
    assert time.monotonic() - started < 60


class _L2Driver:
    """The CUDA driver's persisting-L2 limit, as perfbot/measuring/l2_persistence.py reads it, on
    the CPU: the subject sets it through `perfbot.measuring.l2_persistence.driver().limit`."""

    def __init__(self, limit: int, resets: bool = True):
        self.limit, self.resets = limit, resets

    def set_aside(self) -> int:
        return self.limit

    def reset(self) -> None:
        if self.resets:  # not where the driver refuses (a GPU shared through MPS)
            self.limit = 0


SETS_L2_ASIDE = "import perfbot.measuring.l2_persistence as l2; l2.driver().limit = 1 << 20"


@pytest.mark.parametrize("part", ["at_import", "mine_body"])
def test_a_subject_that_sets_l2_aside_for_persisting_lines_is_refused(gpu, tmp_path: Path, monkeypatch, part: str):
    from perfbot.measuring import l2_persistence

    driver = _L2Driver(0)
    monkeypatch.setattr(l2_persistence, "driver", lambda: driver)
    done = _timed(_project(tmp_path, **{part: SETS_L2_ASIDE}))
    assert done.exit_code == 2, done.output
    assert _one_line(done.stderr).endswith(
        "the subject set 1048576 bytes of L2 aside for persisting lines (cudaLimitPersistingL2CacheSize)"
    )


@pytest.mark.parametrize("resets", [True, False], ids=["reset", "cannot-be-reset"])
def test_l2_set_aside_before_the_subject_loads_is_not_blamed_on_it(gpu, tmp_path: Path, monkeypatch, resets: bool):
    """A runner whose environment sets L2 aside by default (CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_
    PERCENTAGE_LIMIT): the worker resets it before the subject is imported; where the driver will
    not reset it, what was set aside then is the baseline, and only a change from it is the
    subject's."""
    from perfbot.measuring import l2_persistence

    driver = _L2Driver(4096, resets)
    monkeypatch.setattr(l2_persistence, "driver", lambda: driver)
    done = _timed(_project(tmp_path / "honest"))
    assert done.exit_code == 0, done.output
    done = _timed(_project(tmp_path / "sets", mine_body=SETS_L2_ASIDE))
    assert done.exit_code == 2, done.output


def test_run_and_sample_never_run_the_subjects_code_in_perfbots_process(gpu, tmp_path: Path):
    import os

    pids = tmp_path / "pids"
    mark = f"open({str(pids)!r}, 'a').write(f'{{__import__(\"os\").getpid()}}\\n')"
    project = _project(tmp_path / "p", at_import=mark, mine_body=mark.replace("{{", "{").replace("}}", "}"))
    for command in ("run", "sample"):
        done = _timed(project, command)
        assert done.exit_code == 0, done.output
    ran_in = set(pids.read_text().split())
    assert len(ran_in) == 2 and str(os.getpid()) not in ran_in  # one worker per command, neither this process


# --- ab: both sides in a worker process, the verdict in this one ---


def _head_does(repo: Path, code: str) -> Path:
    """The repo's head (its working tree, which `perfbot ab HEAD~1` measures) with `code` run
    first in every call of the fused kernel."""
    geglu = repo / "kernels" / "geglu.py"
    text = geglu.read_text()
    marker = "    _check_inputs(x, weight, approximate)\n"
    assert marker in text
    geglu.write_text(text.replace(marker, f"    {code}\n" + marker, 1))
    return repo


@pytest.mark.parametrize(
    "code,words",
    [
        ("import os; os._exit(0)", "ended (exit 0, as os._exit(0) would) before it answered"),
        ("import torch; torch.cuda.Event.elapsed_time = lambda s, e: 1e-3", "torch.cuda.Event.elapsed_time"),
        ("import perfbot.deciding.stats as s; s.__dict__.clear()", "perfbot.deciding.stats"),
        ("raise KeyboardInterrupt", "implementation 'fused' (case tiny/"),
    ],
)
def test_a_head_that_ends_or_patches_its_worker_fails_the_ab(gpu, repo: Path, tmp_path: Path, code: str, words: str):
    done = _ab(_head_does(repo, code), tmp_path / "ab")
    assert done.exit_code == 2, done.output
    assert words in done.output
    assert not (tmp_path / "ab" / "comment.md").exists()  # no verdict was written


def test_a_dry_run_plans_in_a_process_of_the_subjects_own(repo: Path, tmp_path: Path):
    """`ab --dry-run` times nothing, but loads both sides: in a child, as `check` does. A head
    that ends that process at import is refused, exit 2, never an empty plan with exit 0."""
    import os

    pids = tmp_path / "pids"
    init = repo / "kernels" / "__init__.py"
    original = init.read_text()
    init.write_text(original + f"\nopen({str(pids)!r}, 'a').write(f'{{__import__(\"os\").getpid()}}\\n')\n")
    done = _ab(repo, tmp_path / "ab", "--dry-run")
    assert done.exit_code == 0 and "benchmarks per side" in done.output, done.output
    ran_in = set(pids.read_text().split())
    assert ran_in and str(os.getpid()) not in ran_in
    init.write_text(original + "\nimport os; os._exit(0)\n")
    done = _ab(repo, tmp_path / "ab", "--dry-run")
    assert done.exit_code == 2, done.output
    assert "ended (exit 0, as os._exit(0) would) before it answered" in _one_line(done.stderr)


@pytest.mark.slow
def test_where_a_gpu_is_visible_the_subjects_process_is_a_fresh_interpreter(repo: Path, tmp_path: Path, monkeypatch):
    """CUDA does not survive a fork: where a GPU is visible, `check`, `suites` and the dry run's
    child is started anew (`python -m perfbot.measuring.subject_process`), and answers as a fork
    does. (`explain` takes the same path on the GPU: tests/test_gpu_compiling.py.)"""
    from perfbot.measuring import subject_process

    monkeypatch.setattr(subject_process, "may_fork", lambda: False)
    monkeypatch.setattr(subject_process, "_Forked", None)  # a fork would fail the command
    done = CliRunner().invoke(perfbot, ["check", "--project", str(repo), "--suite", "tiny"])
    assert done.exit_code == 0 and "wrong, of" in done.output, done.output
    done = CliRunner().invoke(perfbot, ["suites", "--project", str(repo)])
    assert done.exit_code == 0 and "tiny" in done.output, done.output
    done = _ab(repo, tmp_path / "ab", "--dry-run")
    assert done.exit_code == 0 and "benchmarks per side" in done.output, done.output


@pytest.mark.parametrize("command", ["check", pytest.param("suites", marks=pytest.mark.slow)])
def test_a_keyboard_interrupt_at_import_in_a_fresh_interpreter_is_refused_naming_it(
    tmp_path: Path, monkeypatch, command: str
):
    """A fresh interpreter that a KeyboardInterrupt leaves kills itself with SIGINT; the guard
    refuses it first, so the line names it rather than a death by SIGINT."""
    from perfbot.measuring import subject_process

    monkeypatch.setattr(subject_process, "may_fork", lambda: False)
    done = _run(_project(tmp_path, at_import="raise KeyboardInterrupt"), command)
    assert done.exit_code == 2, done.output
    assert _one_line(done.stderr).endswith("pk: importing the package raised KeyboardInterrupt")


@pytest.mark.parametrize(
    "error,words",
    [
        (KeyboardInterrupt(), "raised KeyboardInterrupt outside a guarded call"),
        (SystemExit(0), "called sys.exit(0) outside a guarded call"),
    ],
)
def test_a_quit_outside_a_guarded_call_in_a_subjects_process_is_refused(
    tmp_path: Path, monkeypatch, error: BaseException, words: str
):
    """Where the subject's code runs, Ctrl-C is ignored: any quit that reaches the loop is the
    subject's (a thread's `_thread.interrupt_main()`, say), refused naming it, never a child that
    dies saying nothing."""
    from perfbot.errors import BadInput
    from perfbot.measuring import subject_jobs, subject_process, worker, worker_sides

    def quits(*args, **kwargs):
        raise error

    monkeypatch.setitem(subject_jobs.JOBS, "quits", quits)  # the child is a fork: it has it too
    with pytest.raises(BadInput) as refused:
        subject_process.ask("quits", {})
    assert str(refused.value) == f"code perfbot ran for the subject {words}"
    monkeypatch.setattr(worker._Side, "hello", quits)
    process = worker_sides.WorkerProcess("", _project(tmp_path) / "pk", fork=True)
    try:
        with pytest.raises(BadInput) as refused:
            process.hello()
    finally:
        process.close()
    assert str(refused.value) == f"code perfbot ran for the subject {words}"


def test_ab_never_runs_either_sides_code_in_perfbots_process(gpu, repo: Path, tmp_path: Path):
    import os

    pids = tmp_path / "pids"
    done = _ab(
        _head_does(repo, f"open({str(pids)!r}, 'a').write(f'{{__import__(\"os\").getpid()}}\\n')"), tmp_path / "ab"
    )
    assert done.exit_code == 0, done.output
    ran_in = set(pids.read_text().split())
    assert ran_in and str(os.getpid()) not in ran_in


# --- selftest: the subject's code in a process of its own, the tally in this one ---


def _selftest(project: Path):
    args = ["selftest", "--project", str(project), "--suite", "quick", "--case", "c", "--kernel", "mine"]
    return CliRunner().invoke(perfbot, [*args, "--checks", "4", "--samples", "20", "--interference-rounds", "0"])


@pytest.mark.parametrize("part", ["at_import", "mine_body"])
def test_a_subject_that_ends_its_process_fails_the_selftest(gpu, tmp_path: Path, part: str):
    done = _selftest(_project(tmp_path, **{part: "import os; os._exit(0)"}))
    assert done.exit_code == 2, done.output
    last = done.stderr.strip().splitlines()[-1]  # after the note that perfbot's default policy judges
    assert last.startswith("perfbot: error: ") and "ended (exit 0, as os._exit(0) would) before it answered" in last


def test_the_selftest_never_runs_the_subjects_code_in_perfbots_process(gpu, tmp_path: Path, monkeypatch):
    import os

    from perfbot.measuring import selftest
    from tests.test_selftest import _rounds

    # The GPU's timing cannot run here: the checks return synthetic rounds, after a real call.
    monkeypatch.setattr(
        selftest, "measure_checks", lambda fn, levels, checks, *a, **k: [fn(), _rounds(checks, 0.001, levels)][1]
    )
    pids = tmp_path / "pids"
    mark = f"open({str(pids)!r}, 'a').write(f'{{__import__(\"os\").getpid()}}\\n')"
    done = _selftest(_project(tmp_path / "p", mine_body=mark.replace("{{", "{").replace("}}", "}")))
    assert done.exit_code == 0, done.output
    ran_in = set(pids.read_text().split())
    assert ran_in and str(os.getpid()) not in ran_in


def test_a_subject_that_sets_l2_aside_fails_the_selftest(gpu, tmp_path: Path, monkeypatch):
    from perfbot.measuring import l2_persistence, selftest
    from tests.test_selftest import _rounds

    driver = _L2Driver(4096)  # set aside by the runner's environment: reset, not blamed
    monkeypatch.setattr(l2_persistence, "driver", lambda: driver)
    monkeypatch.setattr(
        selftest, "measure_checks", lambda fn, levels, checks, *a, **k: [fn(), _rounds(checks, 0.001, levels)][1]
    )
    assert _selftest(_project(tmp_path / "honest")).exit_code == 0
    done = _selftest(_project(tmp_path / "sets", mine_body=SETS_L2_ASIDE))
    assert done.exit_code == 2, done.output
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith("the subject set 1048576 bytes of L2 aside for persisting lines (cudaLimitPersistingL2CacheSize)")
    )
