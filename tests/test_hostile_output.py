"""What an implementation or a reference returns is the subject's object too: a Tensor subclass
runs the subject's methods in every operation on it, an exception's message is its `__str__`.
perfbot checks them under the same guard as its calls (a quit is refused, exit 2; an ordinary
exception is that implementation's failure, exit 1, or the reference's refusal, exit 2), never
exits 0 for them nor calls their failure its own (exit 3). And only what can be compared is: a
meta, complex or sparse output is wrong, such a reference refused."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from perfbot.cli import _PerfbotGroup
from tests.test_hostile_subject import _check, _one_line, _project

# Classes the subject defines at import: a Tensor subclass whose every torch function quits or
# fails, one whose every operator (torch dispatch) does, and exceptions whose message does.
CLASSES = """
class Quits(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        sys.exit(0)

class Fails(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError("no torch function here")

class QuitsInDispatch(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        sys.exit(0)

class FailsInDispatch(torch.Tensor):
    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError("no dispatch here")

class QuitsInStr(Exception):
    def __str__(self):
        sys.exit(0)

class FailsInStr(Exception):
    def __str__(self):
        raise ValueError("no message")

class HangsInStr(Exception):
    def __str__(self):
        time.sleep(60)
        return "late"
"""


def _run(tmp_path: Path, **parts: str):
    return _check(_project(tmp_path, at_import=CLASSES, **parts))


@pytest.mark.parametrize(
    "body,code,words",
    [
        # A subclass's own methods never run: its values are checked, and these are wrong.
        ("return (x * 3).as_subclass(Quits)", 1, "wrong result"),
        ("return (x * 3).as_subclass(Fails)", 1, "wrong result"),
        ("return (x * 2).as_subclass(Quits)", 0, "2 right, 0 wrong, of 2"),
        # One whose operators are its code: checked under the guard.
        ("return torch.Tensor._make_subclass(QuitsInDispatch, x * 2)", 2, None),
        ("return torch.Tensor._make_subclass(FailsInDispatch, x * 2)", 1, "RuntimeError: no dispatch here"),
        ("raise QuitsInStr()", 2, None),
        ("raise FailsInStr()", 1, "raised FailsInStr: (its message could not be read"),
        ("return torch.empty_like(x, device='meta')", 1, "wrong result: it returned a meta tensor"),
        ("return (x * 2).to(torch.complex64) + 1j", 1, "wrong result: it returned a tensor of dtype torch.complex64"),
        ("return (x * 2).to_sparse()", 1, "wrong result: it returned a tensor of layout torch.sparse_coo"),
        ("return 'twice x'", 1, "wrong result: it returned a str, not a tensor"),
    ],
)
def test_what_an_implementation_returns_or_raises_is_its_own(tmp_path: Path, body: str, code: int, words: str | None):
    done = _run(tmp_path, mine_body=body)
    assert done.exit_code == code, done.output
    if code == 2:
        assert "called sys.exit(0)" in _one_line(done.stderr)
    else:
        assert words in " ".join(done.output.split()), done.output
    if code == 1:
        assert "1 right, 1 wrong, of 2" in done.output


@pytest.mark.parametrize(
    "body,words",
    [
        (
            "return torch.Tensor._make_subclass(QuitsInDispatch, x.double() * 2)",
            "the reference (case quick/c) called sys.exit(0)",
        ),
        (
            "return torch.Tensor._make_subclass(FailsInDispatch, x.double() * 2)",
            "the reference (case quick/c) raised RuntimeError",
        ),
        ("return (x.double() * 2).as_subclass(Quits)", None),
        (
            "return torch.full_like(x, float('nan'), dtype=torch.float64).as_subclass(Quits)",
            "the reference (case quick/c) returned a non-finite value",
        ),
        ("return torch.empty_like(x, device='meta')", "the reference (case quick/c) returned a meta tensor"),
        ("return x.to(torch.complex128)", "returned a tensor of dtype torch.complex128"),
        ("raise QuitsInStr()", "the message of a QuitsInStr from the subject called sys.exit(0)"),
    ],
)
def test_what_a_reference_returns_or_raises_is_refused_if_unusable(tmp_path: Path, body: str, words: str | None):
    done = _run(tmp_path, reference=body)
    if words is None:  # a subclass's own methods never run: the reference is a plain tensor, and right
        assert done.exit_code == 0, done.output
        return
    assert done.exit_code == 2, done.output
    assert words in _one_line(done.stderr)


@pytest.mark.parametrize("part", ["mine_body", "reference"])
def test_a_message_that_never_comes_is_refused_at_the_limit(tmp_path: Path, part: str):
    """An exception's `__str__` is read within the same limit as the call that raised it."""
    done = _check(_project(tmp_path, at_import=CLASSES, **{part: "raise HangsInStr()"}), "--time-limit", "1")
    assert done.exit_code == 2, done.output
    line = _one_line(done.stderr)
    assert "the message of a HangsInStr from the subject did not finish within its time limit of 1 s" in line


def test_a_stray_sys_exit_is_refused_never_its_code():
    """Every command leaves through click (a slowdown's exit 1 too), so a SystemExit that reaches
    the group is the subject's code, run where no guard was expected: refused, exit 2."""

    @click.group(cls=_PerfbotGroup)
    def group() -> None:
        pass

    @group.command()
    @click.argument("code", type=int)
    def quits(code: int) -> None:
        raise SystemExit(code)

    for code in (0, 1, 3):
        done = CliRunner().invoke(group, ["quits", str(code)])
        assert done.exit_code == 2, done.output
        assert f"called sys.exit({code}) outside a guarded call; refused" in _one_line(done.stderr)


def test_the_last_line_is_the_summary_a_ci_can_require(tmp_path: Path):
    """docs/subject.md: a CI can require `N right, 0 wrong, of N`, the last line check prints,
    since a subject that ends the process itself (os._exit) decides the exit code."""
    summary = re.compile(r"([0-9]+) right, 0 wrong, of \1")
    right = _check(_project(tmp_path / "right"))
    assert right.exit_code == 0 and summary.fullmatch(right.stdout.strip().splitlines()[-1]), right.stdout
    wrong = _check(_project(tmp_path / "wrong", mine_body="return x * 3"))
    assert wrong.exit_code == 1 and wrong.stdout.strip().splitlines()[-1] == "1 right, 1 wrong, of 2", wrong.stdout
