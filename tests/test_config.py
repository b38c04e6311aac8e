from pathlib import Path

import pytest

from perfbot.config import find_project_root, load_project_config
from perfbot.errors import BadInput
from tests.conftest import ROOT


def test_pins_the_triton_3_6_0_release_commit():
    config = load_project_config(ROOT)
    assert config.triton_commit == "7c56a5e40f7fd928dfd5c72902d5def0097db73a"
    assert config.kernels_dir == ROOT / "kernels"
    assert config.store_dir == ROOT / ".perfbot/store"


def test_found_from_a_subdirectory():
    assert find_project_root(ROOT / "kernels") == ROOT


@pytest.mark.parametrize(
    "table,words",
    [
        ('triton-commit = "abc"', "40-hex-digit"),
        ('triton-commit = "' + "a" * 40 + '"\ncolour = "red"', "unknown key 'colour'"),
        ('triton-commit = "' + "a" * 40 + '"\nstore = 3', "store must be a path"),
    ],
)
def test_bad_config_is_bad_input(tmp_path: Path, table: str, words: str):
    (tmp_path / "pyproject.toml").write_text(f"[tool.perfbot]\n{table}\n")
    with pytest.raises(BadInput) as error:
        load_project_config(tmp_path)
    assert words in str(error.value) and "pyproject.toml" in str(error.value)


def test_unreadable_toml(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text("[tool.perfbot\n")
    with pytest.raises(BadInput, match="TOML"):
        load_project_config(tmp_path)


GOOD_COMMIT = 'triton-commit = "' + "a" * 40 + '"'


@pytest.mark.parametrize(
    "text,words",
    [
        ("tool = 5\n", "tool must be a table ([tool]), got 5"),
        ("[tool]\nperfbot = 5\n", "tool.perfbot must be a table ([tool.perfbot]), got 5"),
        ("[tool.perfbot]\n" + GOOD_COMMIT + "\nx = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
        ("[tool.perfbot]\n" + GOOD_COMMIT + '\nstore = "a\\u0000b"\n', "store must be a path"),
        ("[tool.perfbot]\n" + GOOD_COMMIT + '\nkernels = ""\n', "kernels must be a path"),
        ("[tool.perfbot]\n" + GOOD_COMMIT + '\nstore = "a\\nb"\n', "store must be a path"),
        ("[tool.perfbot]\n" + GOOD_COMMIT + f'\nstore = "{"s" * 5000}"\n', "store must be a path"),
        ("[tool.perfbot]\n" + 'triton-commit = "' + "a" * 5000 + '"\n', "40-hex-digit SHA, got 'aaaa"),
    ],
)
def test_a_malformed_pyproject_is_refused_naming_the_file(tmp_path: Path, text: str, words: str):
    from click.testing import CliRunner

    from perfbot.cli import perfbot

    (tmp_path / "pyproject.toml").write_text(text)
    result = CliRunner().invoke(perfbot, ["suites", "--project", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert words in result.stderr and str(tmp_path / "pyproject.toml") in result.stderr
    assert result.stderr.count("\n") == 1 and len(result.stderr) < 400


def test_a_pyproject_found_by_searching_upwards_is_checked_too(tmp_path: Path, monkeypatch):
    from click.testing import CliRunner

    from perfbot.cli import perfbot

    (tmp_path / "pyproject.toml").write_text("tool = 5\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(perfbot, ["suites"])
    assert result.exit_code == 2 and "tool must be a table" in result.stderr, result.output


def test_non_utf8_and_a_directory_named_pyproject_are_refused(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.perfbot]\nstore = "\xff\xfe"\n')
    with pytest.raises(BadInput, match=r"pyproject\.toml: cannot read it as TOML: 'utf-8' codec"):
        load_project_config(tmp_path)
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "pyproject.toml").mkdir()
    with pytest.raises(BadInput, match=r"pyproject\.toml: is a directory, not a file"):
        load_project_config(tmp_path)


def test_a_good_path_value_is_taken_as_it_is(tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(f'[tool.perfbot]\n{GOOD_COMMIT}\nstore = "{"s" * 4096}"\n')
    assert load_project_config(tmp_path).store_dir == tmp_path / ("s" * 4096)


def test_an_integer_too_long_for_python_is_refused_in_one_line(tmp_path: Path):
    """tomllib raises ValueError for an integer of over 4300 digits, wherever it is in the file."""
    from click.testing import CliRunner

    from perfbot.cli import perfbot

    (tmp_path / "pyproject.toml").write_text(f"[project]\nv = 1{'0' * 5000}\n[tool.perfbot]\n{GOOD_COMMIT}\n")
    result = CliRunner().invoke(perfbot, ["suites", "--project", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"perfbot: error: {tmp_path / 'pyproject.toml'}: cannot read it as TOML: ")
    assert "4300 digits" in result.stderr and result.stderr.count("\n") == 1
