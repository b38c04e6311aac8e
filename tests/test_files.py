from pathlib import Path

import pytest

from perfbot.errors import BadInput
from perfbot.files import read_text, write_atomic


def test_write_atomic_replaces_or_keeps_and_leaves_no_temporary_file(tmp_path: Path):
    path = tmp_path / "deep" / "a.txt"
    write_atomic(path, "one")
    write_atomic(path, "two")
    assert path.read_text() == "two"
    with pytest.raises(BadInput, match="already exists"):
        write_atomic(path, "three", replace=False)
    assert path.read_text() == "two"
    assert [p.name for p in path.parent.iterdir()] == ["a.txt"]
    with pytest.raises(BadInput, match="is a directory"):
        write_atomic(tmp_path, "x")


def test_read_text_errors(tmp_path: Path):
    with pytest.raises(BadInput, match="no such file"):
        read_text(tmp_path / "none", "thing")
    with pytest.raises(BadInput, match="is a directory, not a thing"):
        read_text(tmp_path, "thing")
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(BadInput, match="cannot read it"):
        read_text(tmp_path / "bin", "thing")
