"""`perfbot explain --mode`: an unknown mode is refused. The compiles of each mode, of the generated
training kernel (tests/backward_subject.py), are checked in tests/test_explain.py, whose one process
without TRITON_INTERPRET runs every explain that compiles."""

from __future__ import annotations

from pathlib import Path

import pytest


def test_an_unknown_mode_is_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from click.testing import CliRunner

    from perfbot.cli import perfbot

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    done = CliRunner().invoke(perfbot, ["explain", "HEAD", "--mode", "sideways", "--project", str(tmp_path)])
    assert done.exit_code == 2, done.output
    assert "--mode" in done.stderr and len(done.stderr.strip().splitlines()) <= 2, done.stderr
