"""The command line: help everywhere, exit codes, and nothing stored is ever lost."""

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from perfbot.cli import COMMANDS, perfbot
from tests.conftest import HAS_GPU, ROOT
from tests.helpers import commands


def test_every_command_and_option_has_help_and_every_command_an_example():
    for path, command in commands():
        assert command.help, path
        assert "Example:" in command.help, path
        for param in command.params:
            if isinstance(param, click.Option) and param.name != "help":
                assert param.help, f"{path} {param.opts}"
        assert CliRunner().invoke(perfbot, [*path, "--help"]).exit_code == 0


def test_the_list_of_commands_shows_each_commands_own_help():
    """`perfbot --help` lists the commands from cli.COMMANDS, without importing them: the list is
    what click would show from the commands themselves."""
    context = click.Context(perfbot)
    loaded = {name: perfbot.get_command(context, name) for name in COMMANDS}
    assert {name: command.get_short_help_str(10**6) for name, command in loaded.items()} == {
        name: help for name, (_, _, help) in COMMANDS.items()
    }
    plain = CliRunner().invoke(click.Group("perfbot", commands=loaded), ["--help"]).output
    shown = invoke("--help").output
    assert shown[shown.index("Commands:") :] == plain[plain.index("Commands:") :]


def test_help_and_version_import_no_command():
    """Each command's module is imported when it runs: `perfbot --help` and `--version` import
    none of them, nor scipy, torch or pydantic (a second of start-up for every call)."""
    probe = (
        "import sys\n"
        "from perfbot.cli import perfbot\n"
        "for args in (['--help'], ['--version']):\n"
        "    perfbot(args, standalone_mode=False)\n"
        "heavy = ('scipy', 'torch', 'triton', 'pydantic', 'ruptures', 'rich')\n"
        "print(sorted(m for m in sys.modules if m.startswith('perfbot.commands') or m.split('.')[0] in heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "Commands:" in done.stdout and "version" in done.stdout
    assert done.stdout.splitlines()[-1] == "[]"


def test_a_command_is_imported_when_it_runs():
    probe = (
        "import sys\n"
        "from perfbot.cli import perfbot\n"
        "perfbot(['suites', '--help'], standalone_mode=False)\n"
        "print(sorted(m for m in sys.modules if m.startswith('perfbot.commands.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "'perfbot.commands.run'" in done.stdout.splitlines()[-1]
    assert "'perfbot.commands.ab'" not in done.stdout.splitlines()[-1]


def test_a_command_that_decides_nothing_imports_no_scipy(tmp_path: Path):
    """scipy (and ruptures, which imports it) is imported where a statistic is computed, not
    when perfbot.deciding is: `perfbot show` prints a results file without it."""
    from perfbot.records import results
    from tests.test_results import sample_results

    results.save(sample_results(), tmp_path / "r.json")
    probe = (
        "import sys\n"
        "from perfbot.cli import perfbot\n"
        f"perfbot(['show', {str(tmp_path / 'r.json')!r}], standalone_mode=False)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'ruptures')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "fused" in done.stdout
    assert done.stdout.splitlines()[-1] == "[]"


def test_a_commands_objects_are_frozen_before_its_exit_collections():
    """The collections at interpreter exit walk every object left; a command that loaded
    PyTorch spent most of a second in them. By the time they run, perfbot has frozen its objects
    (gc.freeze), after the atexit hooks registered while it ran, which still run before."""
    probe = (
        "import atexit, gc\n"
        "atexit.register(lambda: print('frozen at exit', gc.get_freeze_count() > 0))\n"
        "from perfbot.cli import perfbot\n"
        "atexit.register(lambda: print('frozen in a later hook', gc.get_freeze_count() > 0))\n"
        "perfbot(['--version'])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == ["frozen in a later hook False", "frozen at exit True"]


def invoke(*args: str):
    return CliRunner().invoke(perfbot, list(args))


@pytest.mark.skipif(HAS_GPU, reason="checks the machine without a GPU")
def test_run_without_a_gpu_exits_3_with_one_line(project: Path):
    result = invoke("run", "--project", str(project))
    assert result.exit_code == 3
    assert result.output.strip().count("\n") == 0
    assert "no CUDA GPU" in result.output


@pytest.mark.skipif(HAS_GPU, reason="checks the machine without a GPU")
def test_ab_without_a_gpu_names_itself_in_one_line(project: Path, tmp_path: Path):
    from tests.test_runner_cpu import init_repo

    init_repo(project)  # a real A/B of a repository, refused where it would first time a kernel
    result = invoke("ab", "HEAD", "--project", str(project), "--out-dir", str(tmp_path / "ab"))
    assert result.exit_code == 3
    assert result.output.strip().splitlines() == [
        "perfbot: error: no CUDA GPU is visible (torch.cuda.is_available() is False); perfbot ab needs one"
    ]
    assert not any((tmp_path / "ab" / name).exists() for name in ("base.json", "head.json", "comment.md"))


@pytest.mark.parametrize(
    "args,words",
    [
        (["--suite", "nope"], "unknown suite 'nope'"),
        (["--suite", "pr", "--case", "gemma-7b"], "no case 'gemma-7b' in the chosen suites"),
        (["--samples", "3"], "3 is not in the range"),
        (["--kernel", "cutlass"], "unknown implementation 'cutlass'"),
        (["--variant", "approximate=sigmoid"], "approximate is one of none, tanh (or all)"),
        (["--variant", "colour=red"], "subject 'geglu' has no variant 'colour'"),
        (["--variant", "approximate"], "approximate is one of none, tanh"),
        (["--warmup", "0"], "0 is not in the range"),
        (["--bogus"], "No such option"),
    ],
)
def test_bad_run_arguments_exit_2(project: Path, args, words):
    result = invoke("run", "--project", str(project), *args)
    assert result.exit_code == 2, result.output
    assert words in result.output


def test_existing_results_file_is_never_overwritten(project: Path, tmp_path: Path):
    out = tmp_path / "results.json"
    out.write_text("precious")
    result = invoke("run", "--project", str(project), "--out", str(out))
    assert result.exit_code == 2
    assert "--overwrite" in result.output
    assert out.read_text() == "precious"


def test_broken_suites_file_exits_2_naming_it(project: Path):
    (project / "kernels" / "suites.yaml").write_text(
        "pr:\n  dtype: float16\n  cases:\n    - {name: a, M: 0, K: 1, N: 1}\n"
    )
    result = invoke("suites", "--project", str(project))
    assert result.exit_code == 2
    assert (
        "suites.yaml" in result.output
        and "parameters must be 1 to 16 integers from 1 to 2^40, got M=0" in result.output
    )


def test_no_project_found_exits_2(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("suites")
    assert result.exit_code == 2
    assert "[tool.perfbot]" in result.output


def test_suites_lists_the_real_suites():
    result = invoke("suites")
    assert result.exit_code == 0
    for suite in ("pr:", "a100:", "models:", "decode:"):
        assert suite in result.output
    assert "gemma-3-27b" in result.output


def test_env_works_without_a_gpu_and_as_json():
    result = invoke("env", "--json")
    assert result.exit_code == 0
    record = json.loads(result.output)
    for key in ("torch", "triton", "cuda", "gpu_name", "driver", "gpu_state", "triton_commit"):
        assert key in record
    if not HAS_GPU:
        assert record["gpu_name"] is None and record["nvml_error"]
    assert invoke("env").exit_code == 0


def test_console_script_is_installed():
    exe = Path(sys.executable).parent / "perfbot"
    assert exe.is_file(), "pip install -e . should install the perfbot command beside python"
    done = subprocess.run([str(exe), "run", "--samples", "1"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_show_prints_a_stored_results_file(tmp_path: Path):
    from perfbot.records import results
    from tests.test_results import sample_results

    path = tmp_path / "r.json"
    results.save(sample_results(), path)
    result = invoke("show", str(path))
    assert result.exit_code == 0
    assert "fused" in result.output and "wrong result" in result.output
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    result = invoke("show", str(bad))
    assert result.exit_code == 2 and "not valid JSON" in result.output


def _numeric_options():
    for path, command in commands():
        for param in command.params:
            if isinstance(param, click.Option) and isinstance(
                param.type, (click.types.IntParamType, click.types.FloatParamType)
            ):
                yield path, param


def test_every_number_an_option_takes_has_a_range_and_a_float_is_finite():
    from perfbot.commands.options import FiniteRange

    found = list(_numeric_options())
    assert len(found) > 20  # every command's counts, seeds, limits and levels
    for path, param in found:
        assert isinstance(param.type, (click.IntRange, FiniteRange)), (path, param.opts)
        assert param.type.min is not None and param.type.max is not None, (path, param.opts)


@pytest.mark.parametrize("value", ["1180591620717411303424", "-1180591620717411303424"])
def test_a_huge_number_for_any_option_is_a_bad_argument_in_one_line(value: str):
    for path, param in _numeric_options():
        result = invoke(*path, param.opts[0], value)
        assert result.exit_code == 2, (path, param.opts, result.output)
        assert result.stderr.startswith("perfbot: error: ") and result.stderr.count("\n") == 1, result.stderr
        assert "not in the range" in result.stderr and f"see perfbot {' '.join(path)} --help" in result.stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_nan_and_inf_are_refused_where_an_option_takes_a_fraction(value: str):
    for path, param in _numeric_options():
        if isinstance(param.type, click.types.FloatParamType):
            result = invoke(*path, param.opts[0], value)
            assert result.exit_code == 2, (path, param.opts, result.output)
            assert "not a finite number" in result.stderr or "not in the range" in result.stderr, result.stderr


@pytest.mark.parametrize("seed,refused", [("-1", True), ("0", False), ("4294967295", False), ("4294967296", True)])
def test_the_seed_is_from_0_to_2_to_the_32_less_1(project: Path, seed: str, refused: bool):
    result = invoke("check", "--project", str(project), "--seed", seed, "--suite", "nope")
    assert result.exit_code == 2
    assert ("Invalid value for '--seed'" in result.stderr) == refused, result.stderr
    assert ("unknown suite 'nope'" in result.stderr) != refused


def _interrupted(argv: list[str], started) -> subprocess.CompletedProcess:
    """Run perfbot in a process of its own, wait until `started()`, send it SIGINT (as Ctrl-C
    does, to the process alone: the group's other members are the test's)."""
    import signal
    import sys
    import time

    # A runner started in a shell's background (`pytest &`, nohup) passes SIGINT down ignored, and
    # Python then never raises KeyboardInterrupt: here it is as in a terminal (tests/test_shards.py).
    process = subprocess.Popen(
        [sys.executable, "-m", "perfbot", *argv],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 120
        while not started() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert process.poll() is None, process.communicate()[1]
        time.sleep(0.5)  # well inside the wait
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    return subprocess.CompletedProcess(argv, process.returncode, "", stderr)


@pytest.mark.slow
def test_ctrl_c_while_a_subject_hangs_at_import_exits_130_in_one_line(project: Path, tmp_path: Path):
    marker = tmp_path / "importing"
    init = project / "kernels" / "__init__.py"
    init.write_text(f"import pathlib, time\npathlib.Path({str(marker)!r}).touch()\nwhile True:\n    time.sleep(0.1)\n")
    done = _interrupted(["check", "--project", str(project)], marker.exists)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "perfbot: interrupted\n"


def test_ctrl_c_while_waiting_for_the_store_lock_exits_130_in_one_line(tmp_path: Path):
    """A wait perfbot cannot end by itself (an input is never a fifo, so a read does not block):
    another update holding the store's lock."""
    import fcntl
    import os

    from perfbot.records import results
    from tests.helpers import make_results

    run, store = tmp_path / "r.json", tmp_path / "store"
    results.save(make_results(seed=1), run)
    store.mkdir()
    with (store / ".lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        inode = f":{os.stat(store / '.lock').st_ino} "

        def waiting() -> bool:
            """Whether a process waits for the lock (a blocked lock shows as `->` in /proc/locks)."""
            return any("->" in line and inode in line for line in Path("/proc/locks").read_text().splitlines())

        done = _interrupted(["baseline", "update", str(run), "--store", str(store)], waiting)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "perfbot: interrupted\n"
    assert not list(store.glob("*/*.json"))


def test_an_abort_inside_a_command_is_an_interruption_not_a_slowdown(monkeypatch, tmp_path: Path):
    from perfbot.records import results

    def aborted(path):
        raise click.exceptions.Abort()

    monkeypatch.setattr(results, "load", aborted)
    result = invoke("show", str(tmp_path / "r.json"))
    assert result.exit_code == 130 and result.stderr == "perfbot: interrupted\n"


def test_a_refusal_is_one_line_and_a_tools_output_keeps_its_lines_each_bounded(monkeypatch, tmp_path: Path):
    from perfbot.cli import MAX_LINE, MAX_TOOL_LINES
    from perfbot.errors import BadInput, EnvironmentFailure
    from perfbot.records import results

    def refused(path):
        raise BadInput("first\nsecond")

    monkeypatch.setattr(results, "load", refused)
    result = invoke("show", str(tmp_path / "r.json"))
    assert result.exit_code == 2 and result.stderr == "perfbot: error: first second\n"

    log = [f"log line {i} " + "y" * (2000 if i == 99 else 0) for i in range(100)]

    def failed(path):
        raise EnvironmentFailure("building failed; full log: L\n" + "\n".join(log))

    monkeypatch.setattr(results, "load", failed)
    result = invoke("show", str(tmp_path / "r.json"))
    lines = result.stderr.splitlines()
    assert result.exit_code == 3 and lines[0] == "perfbot: error: building failed; full log: L"
    assert len(lines) == 1 + MAX_TOOL_LINES and lines[1] == "log line 60 "  # the end of the log
    assert len(lines[-1]) == MAX_LINE and lines[-1].startswith("log line 99 yyy")
