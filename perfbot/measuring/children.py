"""How perfbot starts a process for a subject's code, and says how it ended: shared by the
subject's one-job child (subject_process.py) and the workers that measure (worker.py)."""

from __future__ import annotations

import functools
import importlib
import os
import pkgutil
import signal
import sys
from collections.abc import Callable
from typing import IO, Any

from ..errors import BadInput

# What the child imports before the subject, so that all perfbot code it runs is noted untouched.
PREIMPORTED = ("perfbot.loading", "perfbot.records", "perfbot.compiling", "perfbot.deciding", "perfbot.measuring")


class SubjectQuit(BadInput):
    """The subject's process ended, or changed what it may not, before it answered: refused."""


def how_it_ended(status: int | None) -> str:
    """A child's ending, as its refusal says it: its exit status or the signal that ended it."""
    if status is None:
        return "stopped answering"
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"was killed by {name}"
    return f"ended (exit {status}{', as os._exit(0) would' if status == 0 else ''})"


def may_fork() -> bool:
    """Whether a child may be a fork of this process, which starts at once with what this one has
    imported (PyTorch, in a test). Not where a GPU is visible: a fork inherits whatever of CUDA
    this process touched (a device count can start the driver), and CUDA does not survive a
    fork. The child is a fresh interpreter then, which costs a second or two."""
    import torch  # what this process has of it, if anything: its measuring imports it anyway

    return hasattr(os, "fork") and not (torch.cuda.is_initialized() or torch.cuda.is_available())


def fork_child(stdin: int, output: int, channel: int, run: Callable[[IO[str]], None]) -> int:
    """Fork a child that runs `run(its channel)`, and return its pid. Its fd 0 reads `stdin`, its
    fd 1 and 2 write `output` (what the subject prints never reaches the channel), and it keeps no
    other descriptor of the parent's (a test runner's channels are not the subject's). It ends
    with os._exit, so that nothing of the parent's (its atexit hooks, a test runner's teardown)
    runs twice."""
    with_room = _with_room_below()  # made here, once, not in every child
    pid = os.fork()
    if pid:
        return pid
    status = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group; the parent stops this one
        os.dup2(stdin, 0)
        os.dup2(output, 1)
        os.dup2(output, 2)
        os.closerange(3, channel)
        os.closerange(channel + 1, os.sysconf("SC_OPEN_MAX"))
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        with_room(run, os.fdopen(channel, "w", buffering=1))
    except BaseException:  # noqa: BLE001 -- the child never returns into the parent's code
        status = 3
    finally:
        os._exit(status)


# CPython (3.11 on) keeps its frames on a stack of chunks and frees a chunk as soon as the frame at
# its start returns: a loop of calls across a chunk's edge maps and unmaps one on every call, a page
# fault each time. A fork starts as deep as its parent was, wherever that puts the edges (in a test
# runner's fork, Triton's interpreter did that 240,000 times in one check: half of its CPU). So the
# child's work is called from a frame of this many slots. CPython sizes a new chunk for a frame and
# 1,000 slots more, doubling from 16 KiB: this one opens a chunk of 128 KiB and leaves 70 KiB below.
ROOMY_FRAME_SLOTS = 7300


@functools.cache
def _with_room_below() -> Callable[[Callable[[IO[str]], None], IO[str]], None]:
    """A function that calls `run(channel)` from a frame of ROOMY_FRAME_SLOTS locals: a function of
    that many names can only be written out."""
    names = " = ".join(f"_{index}" for index in range(ROOMY_FRAME_SLOTS))
    made: dict[str, Any] = {}
    exec(f"def call(run, channel):\n    {names} = None\n    run(channel)\n", made)
    return made["call"]


@functools.cache
def preimport() -> None:
    for name in PREIMPORTED:
        package = importlib.import_module(name)
        for module in pkgutil.walk_packages(package.__path__, f"{name}."):
            try:
                importlib.import_module(module.name)
            except ImportError:  # an optional dependency this machine lacks (pynvml, say)
                continue
