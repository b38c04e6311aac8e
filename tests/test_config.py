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
