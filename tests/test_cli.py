"""The command line: help everywhere, exit codes, and nothing stored is ever lost."""

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from tests.conftest import HAS_GPU


def _commands(group: click.Group, prefix: tuple[str, ...] = ()):
    for name, command in group.commands.items():
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from _commands(command, (*prefix, name))


def test_every_command_and_option_has_help_and_every_command_an_example():
    for path, command in _commands(perfbot):
        assert command.help, path
        assert "Example:" in command.help, path
        for param in command.params:
            if isinstance(param, click.Option) and param.name != "help":
                assert param.help, f"{path} {param.opts}"
        assert CliRunner().invoke(perfbot, [*path, "--help"]).exit_code == 0


def invoke(*args: str):
    return CliRunner().invoke(perfbot, list(args))


@pytest.mark.skipif(HAS_GPU, reason="checks the machine without a GPU")
def test_run_without_a_gpu_exits_3_with_one_line(project: Path):
    result = invoke("run", "--project", str(project))
    assert result.exit_code == 3
    assert result.output.strip().count("\n") == 0
    assert "no CUDA GPU" in result.output


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
    import subprocess
    import sys

    exe = Path(sys.executable).parent / "perfbot"
    assert exe.is_file(), "pip install -e . should install the perfbot command beside python"
    done = subprocess.run([str(exe), "run", "--samples", "1"], capture_output=True, text=True)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_show_prints_a_stored_results_file(tmp_path: Path):
    from perfbot import results
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
