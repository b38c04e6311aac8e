"""The subject's code in a process of its own: the judge apart from the judged.

A command that runs a subject's code (its import, inputs, references, implementations) runs it
here, in a child process, and decides in the parent, which runs none of it: the exit code, what
is printed and what is written come from the parent, out of the child's answer. A child that
ends without answering (`os._exit(0)` at import, a crash, a signal) is refused, exit 2, with how
it ended; so is one whose subject changed perfbot's own code or its clocks (untouched.py).

Protocol: the child gets one request, {"job": ..., "nonce": ..., ...}: in memory when it is a
fork of the parent, as a JSON line on stdin when it is a fresh interpreter. It answers on a pipe
of its own (its fd 1 and 2 point at another, which the parent passes on to its stderr, so that
what the subject prints never reaches the answers), one JSON object per line:
{"progress": label} any number of times, then {"answer": {...}} or {"error": message, "exit":
code, "option": name or null}, each carrying the request's nonce. The nonce is drawn by the
parent when it starts the child, so that a line the subject writes at import is no answer.
"""

from __future__ import annotations

import collections
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from typing import IO, Any

from ..errors import (
    EXIT_BAD_INPUT,
    EXIT_ENVIRONMENT,
    BadInput,
    EnvironmentFailure,
    PerfbotError,
    WrongResult,
    unexpected,
)
from .children import SubjectQuit, fork_child, how_it_ended, may_fork, preimport

COMMAND = (sys.executable, "-m", "perfbot.measuring.subject_process")
ERROR_LEAD = "perfbot: error: "  # how a line of perfbot's own error starts
_ERRORS: dict[object, type[PerfbotError]] = {1: WrongResult, 2: BadInput, 3: EnvironmentFailure}


def ask(
    job: str, request: Mapping[str, Any], on_progress: Callable[[object], None] = lambda told: None
) -> dict[str, Any]:
    """Run `job` in a child process and return its answer. Its refusals come back as the
    PerfbotError they were (a BadChoice as selection.BadChoice, naming its option)."""
    message = {"job": job, "nonce": secrets.token_hex(16), **request}
    if may_fork():
        # What every child imports before the subject, imported here once: a fork starts with it
        # (a test process forks a child for each check). The device is chosen first, as the child
        # would, since the choice must come before Triton's import.
        if "device" in message:
            from .checking import choose_device

            choose_device(message["device"])
        preimport()
        child: _Forked | _Spawned = _Forked(message)
    else:
        child = _Spawned(message)
    said = _Relay(child.errors)
    try:
        reply = _answer(child.answers, message["nonce"], on_progress)
    except KeyboardInterrupt:
        child.kill()
        raise
    finally:
        ended = child.wait()
        said.join()
    if reply is None:
        if said.error is not None and ended == 2:  # the guard's watchdog ended it, and said why (guard.py)
            raise SubjectQuit(said.error)
        raise SubjectQuit(f"the subject's process {how_it_ended(ended)} before it answered: {said.tail()}")
    if "error" in reply:
        if reply.get("option") is not None or reply.get("choice"):
            from ..loading.selection import BadChoice

            raise BadChoice(str(reply["error"]), reply.get("option"))
        raise _ERRORS.get(reply.get("exit"), EnvironmentFailure)(str(reply["error"]))
    answer = reply.get("answer")
    if not isinstance(answer, dict):
        raise EnvironmentFailure("the subject's process answered without an answer")
    return answer


def _answer(lines: IO[str], nonce: str, on_progress: Callable[[object], None]) -> dict[str, Any] | None:
    """The child's last word: progress lines told on, then its answer or error; None if it ended
    first. A line without the nonce is not the child's: refused."""
    for line in lines:
        try:
            message = json.loads(line)
        except ValueError:
            raise SubjectQuit(
                "the subject's process wrote something that is not an answer on its answer channel"
            ) from None
        if not isinstance(message, dict) or message.pop("nonce", None) != nonce:
            raise SubjectQuit("a line on the subject process's answer channel does not carry its nonce: refused")
        if "progress" in message:
            on_progress(message["progress"])
            continue
        return message
    return None


class _Relay(threading.Thread):
    """What the child writes on stderr (the subject's prints among it), passed on to ours as it
    comes, its last lines kept to say why it ended."""

    def __init__(self, stream: IO[str], kept: int = 5):
        super().__init__(daemon=True)
        self.stream, self.last = stream, collections.deque[str](maxlen=kept)
        self.start()

    error: str | None = None  # the child's own one-line error, said by the parent instead

    def run(self) -> None:
        for line in self.stream:
            if line.startswith(ERROR_LEAD):
                self.error = line.removeprefix(ERROR_LEAD).rstrip()
                continue
            sys.stderr.write(line)
            if line.strip():
                self.last.append(line.rstrip())

    def tail(self) -> str:
        return " | ".join(self.last) or "nothing on its stderr"


# The child's half.


class _Forked:
    """The child as a fork of this process (`fork_child`), its request in memory."""

    def __init__(self, message: dict[str, Any]):
        answers_read, answers_write = os.pipe()
        errors_read, errors_write = os.pipe()
        null = os.open(os.devnull, os.O_RDONLY)
        self.pid = fork_child(null, errors_write, answers_write, lambda answers: serve(dict(message), answers))
        for parents_copy in (null, answers_write, errors_write):
            os.close(parents_copy)
        self.answers = os.fdopen(answers_read)
        self.errors = os.fdopen(errors_read, errors="replace")

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self) -> int:
        _, status = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(status)


class _Spawned:
    """The child as a fresh interpreter (python -m perfbot.measuring.subject_process)."""

    def __init__(self, message: dict[str, Any]):
        try:
            self.process = subprocess.Popen(
                COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        except OSError as error:
            raise EnvironmentFailure(f"cannot start the subject's process ({COMMAND[0]}): {error}") from None
        assert self.process.stdin is not None and self.process.stdout is not None and self.process.stderr is not None
        self.answers, self.errors = self.process.stdout, self.process.stderr
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.close()
        except OSError:
            pass  # it ended already: said with how

    def kill(self) -> None:
        self.process.kill()

    def wait(self) -> int:
        return self.process.wait()


def serve(request: dict[str, Any], answers: IO[str]) -> None:
    """The child: run the request's job, answer on `answers`."""
    nonce = request.pop("nonce")
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group; the parent stops this one

    def say(message: dict[str, Any]) -> None:
        answers.write(json.dumps({**message, "nonce": nonce}) + "\n")

    from ..loading.guard import stray
    from ..loading.selection import BadChoice
    from . import l2_persistence
    from .checking import choose_device
    from .subject_jobs import JOBS
    from .untouched import Untouched

    untouched = None
    timed = request.get("job") == "selftest"  # the one job that times: L2 set aside would flatter it
    try:
        if "device" in request:  # before Triton is first imported: its interpreter is chosen then
            request["device"] = choose_device(request["device"])
        preimport()
        if timed:
            l2_persistence.start_clean()
        untouched = Untouched()
        run = JOBS.get(request.pop("job"))
        if run is None:
            raise BadInput("unknown job")
        reply: dict[str, Any] = {"answer": run(**request, progress=lambda told: say({"progress": told}))}
    except BadChoice as error:
        reply = {"error": error.reason, "exit": error.exit_code, "option": error.option, "choice": True}
    except PerfbotError as error:
        reply = {"error": str(error), "exit": error.exit_code}
    except Exception as error:  # noqa: BLE001 -- told to the parent, which says it in one line
        reply = {"error": unexpected(error), "exit": EXIT_ENVIRONMENT}
    except BaseException as error:  # noqa: BLE001 -- the subject's, outside a guarded call (Ctrl-C is ignored here)
        reply = {"error": stray(error), "exit": EXIT_BAD_INPUT}
    # Whatever the job came to, a subject that changed perfbot or a clock is refused for that:
    # what perfbot computed after the change is not perfbot's.
    if untouched is not None:
        refused = untouched.refusal() or (l2_persistence.residue() if timed else None)
        if refused is not None:
            reply = {"error": refused, "exit": 2}
    say(reply)


def main() -> None:
    """A spawned child: the request on stdin, the answers on its own copy of stdout."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # what the subject prints goes to stderr, never the answers
    serve(json.loads(sys.stdin.readline()), answers)


if __name__ == "__main__":
    # Run as perfbot.measuring.subject_process, the module untouched.py watches, not as a copy in __main__.
    from perfbot.measuring.subject_process import main as child_main

    child_main()
