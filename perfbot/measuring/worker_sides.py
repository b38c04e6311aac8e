"""The coordinator's side of a worker process (worker.py): starting workers, asking them, and
the sides of a run they hold (runner.Sides), timed a round or a sample at a time. What a worker
answers is input like any file: validated before it becomes a record, and an answer without the
hello's nonce, or a worker that ends before it answers, is refused (exit 2)."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import secrets
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any, TypeGuard

from ..errors import BadInput, EnvironmentFailure, PerfbotError, WrongResult
from ..loading.selection import BadChoice
from ..records.run import BENCHMARK, ENVIRONMENT, FAILURE, SETTINGS, Benchmark, Environment, Failure
from ..records.schema import validate_message
from .children import SubjectQuit, fork_child, how_it_ended, may_fork, preimport
from .planning import RunSettings
from .worker import BOTH, picks_of, serve, suite_from, suite_json

WORKER_COMMAND = (sys.executable, "-m", "perfbot.measuring.worker")
# After measure.L2_FLUSH (measure imports torch, which the coordinator loads only when it runs).
TIMING = (
    "one CUDA-graph replay per sample, {flush}; one worker process per side, the sides alternating sample by sample"
)
# Every benchmark in one worker, timed a round at a time: the method runner.LocalSides names, the
# same whichever process it runs in (a stored baseline's timing compares equal).
ROUNDS_TIMING = "one CUDA-graph replay per sample, {flush}, implementations interleaved"
_ERRORS: dict[object, type[PerfbotError]] = {1: WrongResult, 2: BadInput, 3: EnvironmentFailure}
# How long a worker may take to answer a request that runs no guarded call, before it is stopped
# and refused (exit 2): a kernel that never ends would otherwise hold the run until the job's own
# timeout. A timed round or sample takes milliseconds to seconds; fresh captures of a case's
# benchmarks, or their fresh-input check, minutes at most. The requests that load, check and
# capture (hello, choose, one, prepare) have no deadline here: in the worker each of their calls
# into the subject is held to guard's limits (an import to IMPORT_LIMIT_S, a call to
# MEASURED_CALL_LIMIT_S), however many calls a case makes. docs/method.md, "What a subject can and
# cannot do to a verdict".
TIMED_S, CAPTURING_S = 600.0, 3600.0
DEADLINE_S = {"round": TIMED_S, "sample": TIMED_S, "recapture": CAPTURING_S, "finish": CAPTURING_S}


class WorkerProcess:
    """The coordinator's handle on one worker: start it, ask it things, stop it. `fork`: the
    worker is a fork of this process where no GPU is visible (the CPU, where the tests stand in
    for one: children.may_fork), which starts at once with what this process has
    imported; else a fresh interpreter runs `command`."""

    def __init__(
        self,
        side: str,
        kernels: Path,
        triton_env: Path | None = None,
        command: Sequence[str] | None = None,
        triton_commit: str | None = None,
        gpu: str | None = None,
        declared_by: Path | None = None,
        fork: bool = False,
        before: Callable[[], None] | None = None,
    ):
        """`before`: run first in a forked worker, before anything touches CUDA (shards._pin)."""
        self.side = side
        self.nonce = secrets.token_hex(16)
        self._hello: dict[str, Any] | None = None
        self._log = tempfile.TemporaryFile(mode="w+", errors="replace")
        if fork and triton_env is None and may_fork():
            preimport()  # what every worker imports before the subject, imported here once for all forks
            forked = _Forked(kernels, side, declared_by, self._log, gpu, before)
            self._process: subprocess.Popen[str] | _Forked = forked
            self._requests: IO[str] = forked.requests
            self._replies: IO[str] = forked.replies
            return
        env = dict(os.environ)
        if gpu is not None:  # a sharded A/B: this GPU's pair of workers (shards.py)
            env["CUDA_VISIBLE_DEVICES"] = gpu
        if triton_env is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(triton_env), env.get("PYTHONPATH")]))
            # A commit set for this process's Triton does not describe the other one.
            env.pop("PERFBOT_TRITON_COMMIT", None)
        if triton_commit is not None:
            env["PERFBOT_TRITON_COMMIT"] = triton_commit
        command = command or WORKER_COMMAND
        try:
            spawned = subprocess.Popen(
                [*command, "--kernels", str(kernels), "--side", side]
                + (["--declared-by", str(declared_by)] if declared_by is not None else []),
                env=env,
                text=True,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._log,
            )
        except OSError as error:
            raise EnvironmentFailure(f"cannot start the {side} worker ({command[0]}): {error}") from None
        if spawned.stdin is None or spawned.stdout is None:  # both are pipes, as asked above
            raise EnvironmentFailure(f"the {side} worker has no pipes to talk through")
        self._process = spawned
        self._requests = spawned.stdin
        self._replies = spawned.stdout

    @property
    def name(self) -> str:
        return f"the {self.side} worker" if self.side else "the worker"

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        if op == "hello":  # the first request: the nonce every answer carries from now on
            fields = {**fields, "nonce": self.nonce}
        deadline = DEADLINE_S.get(op)
        try:
            self._requests.write(json.dumps({"op": op, **fields}) + "\n")
            self._requests.flush()
            # One line answers one request, so nothing waits in the reader's buffer here.
            with selectors.DefaultSelector() as waiting:
                waiting.register(self._replies, selectors.EVENT_READ)
                answered = waiting.select(deadline)
            line = self._replies.readline() if answered else None
        except (BrokenPipeError, OSError):
            line = ""
        if line is None:
            self.kill()
            raise SubjectQuit(
                f"{self.name} did not answer {op!r} within {deadline:g} s (a kernel that never ends?): stopped; "
                f"{self._log_tail()}"
            )
        if not line:
            # It runs the subject's code: an ending the subject can cause (os._exit, a crash) is refused.
            raise SubjectQuit(f"{self.name} {how_it_ended(self._ended())} before it answered: {self._log_tail()}")
        try:
            reply = json.loads(line)
        except ValueError:
            raise SubjectQuit(f"{self.name} answered with something that is not JSON: refused") from None
        if not isinstance(reply, dict) or reply.pop("nonce", None) != self.nonce:
            raise SubjectQuit(f"a line on {self.name}'s answer channel does not carry its nonce: refused")
        if "error" in reply:
            if reply.get("option") is not None or reply.get("choice"):
                raise BadChoice(str(reply["error"]), reply.get("option"))
            # Said of the side where a worker holds one of two; else as perfbot's own error.
            said = f"{self.name}: " if self.side in ("base", "head") else ""
            code = reply.get("exit")
            kind = _ERRORS.get(code, EnvironmentFailure) if isinstance(code, int) else EnvironmentFailure
            raise kind(f"{said}{reply['error']}")
        return reply

    def hello(self) -> dict[str, Any]:
        """The worker's first answer, once: it loads the subject, and says what it runs on."""
        if self._hello is None:
            self._hello = self.ask("hello")
        return self._hello

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self._requests.write(json.dumps({"op": "quit"}) + "\n")
                self._requests.flush()
                self._process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
        for channel in (self._requests, self._replies, self._log):
            try:
                channel.close()
            except OSError:
                pass

    def kill(self) -> None:
        """Stop it now, mid-request (Ctrl-C in the coordinator)."""
        self._process.kill()
        self._process.wait()

    def _ended(self) -> int | None:
        try:
            return self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None

    def _log_tail(self, lines: int = 5, most: int = 64 * 1024) -> str:
        # Read where it is, without moving the offset the worker writes at (a fork shares it).
        size = os.fstat(self._log.fileno()).st_size
        text = os.pread(self._log.fileno(), most, max(0, size - most)).decode(errors="replace")
        tail = [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail) or "(nothing on stderr)"


@contextmanager
def both_sides(
    kernels: Mapping[str, Path], gpu: str | None = None, before: Callable[[], None] | None = None
) -> Iterator[WorkerProcess]:
    """One worker that holds both sides of an A/B with one Triton (BOTH): each side loaded from
    its own kernels, the head judged by the base's declarations; pinned to `gpu` (a
    CUDA_VISIBLE_DEVICES entry) if given. Stopped afterwards."""
    worker = WorkerProcess(BOTH, kernels["head"], gpu=gpu, declared_by=kernels["base"], fork=True, before=before)
    try:
        yield worker
    except KeyboardInterrupt:  # it ignores Ctrl-C: it stops now, not after a request
        worker.kill()
        raise
    finally:
        worker.close()


@contextmanager
def workers(
    specs: dict[str, tuple[Path, Path | None, str | None]],
    command: Sequence[str] | None = None,
    gpu: str | None = None,
    fork: bool = False,
    before: Callable[[], None] | None = None,
) -> Iterator[dict[str, WorkerProcess]]:
    """Started workers by side, from (kernels, triton environment or None, Triton commit or None),
    pinned to `gpu` (a CUDA_VISIBLE_DEVICES entry) if given, forked where they can be with `fork`;
    all stopped afterwards."""
    with ExitStack() as stack:
        started: dict[str, WorkerProcess] = {}
        base = specs["base"][0] if "base" in specs else None
        try:
            for side, (kernels, triton_env, commit) in specs.items():
                # The head runs under the base's declarations (declarations.py): its worker loads both.
                declared_by = base if side == "head" else None
                started[side] = WorkerProcess(
                    side, kernels, triton_env, command, commit, gpu, declared_by, fork, before
                )
                stack.callback(started[side].close)
            yield started
        except KeyboardInterrupt:  # the workers ignore Ctrl-C (main): they stop now, not after a request
            for process in started.values():
                process.kill()
            raise


class WorkerSides:
    """The sides of a run in worker processes (runner.Sides): per case, every worker checks and
    captures its benchmarks. Where one worker holds every side (`perfbot run`, an A/B with one
    Triton), a round is one request to it; else each sample is one request to the worker that
    owns it, so that two workers never share the GPU at once."""

    def __init__(
        self, workers: dict[str, WorkerProcess], settings: RunSettings, fixed: Mapping[str, Any] | None = None
    ):
        """`workers` by side, the base's first (a worker of both sides under either name);
        `fixed`: the autotune picks each benchmark is to run, by planned key (a confirming
        round's, alignment.fix)."""
        from . import measure

        self.timing = (ROUNDS_TIMING if len(workers) == 1 else TIMING).format(flush=measure.L2_FLUSH)
        self.workers, self.settings, self.fixed = workers, settings, fixed
        self.owner: dict[str, WorkerProcess] = {}
        hellos = {side: entry for w in workers.values() for side, entry in _sides(w).items()}
        self.names = tuple(hellos)
        self._environments = {
            side: validate_message(f"the {side} side's environment", _record(side, entry), ENVIRONMENT, "environment")
            for side, entry in hellos.items()
        }
        self._described = {side: _described(side, entry) for side, entry in hellos.items()}

    def prepare(self, case: Any) -> tuple[list[str], list[tuple[str, Failure]]]:
        self.owner, failed = {}, []
        picks: dict[str, list[dict[str, Any]]] | None = None  # the base's, that the head is aligned to
        for side, worker in self.workers.items():  # the base first
            extra: dict[str, Any] = {}
            if self.fixed is not None:
                held = _sides(worker)
                extra["fixed"] = {
                    key: [dataclasses.asdict(p) for p in chosen]
                    for key, chosen in self.fixed.items()
                    if key.partition(":")[0] in held
                }
            elif side == "head" and picks is not None:
                extra["against"] = picks
            rounds = len(self.workers) == 1  # as `timer` times them
            reply = worker.ask(
                "prepare", suite=suite_json(case), settings=self.settings.to_wire(), rounds=rounds, **extra
            )
            ready = _list(worker.name, reply, "ready")
            held = _sides(worker)
            # A benchmark's key names its side ("base:NAME"), except in a run's one side ("").
            if any(not isinstance(key, str) or key in self.owner or _side_of(key, held) not in held for key in ready):
                raise EnvironmentFailure(f"{worker.name} answered benchmarks of sides it does not hold")
            self.owner.update(dict.fromkeys(ready, worker))
            failed += _tagged(worker, reply, "failures", FAILURE, "failure")
            if side == "base":
                picks = {name: [dataclasses.asdict(p) for p in ps] for name, ps in picks_of(side, reply).items()}
        return list(self.owner), failed

    def timer(self) -> Any:
        if len(self.workers) == 1:  # every benchmark in one worker: a round is one request
            (worker,) = self.workers.values()
            return _RoundTimer(worker)
        return _WorkerTimer(self.owner)

    def recapture(self, keys: list[str]) -> None:
        for worker in self.workers.values():
            mine = [key for key in keys if self.owner.get(key) is worker]
            if mine:
                worker.ask("recapture", keys=mine)

    def finish(
        self, samples: dict[str, list[float]], throttled: list[int]
    ) -> tuple[list[tuple[str, Benchmark]], list[tuple[str, Failure]]]:
        timed: list[tuple[str, Benchmark]] = []
        wrong: list[tuple[str, Failure]] = []
        for worker in self.workers.values():
            mine = {key: values for key, values in samples.items() if self.owner.get(key) is worker}
            reply = worker.ask("finish", samples=mine, throttled=throttled)
            timed += _tagged(worker, reply, "benchmarks", BENCHMARK, "benchmark")
            wrong += _tagged(worker, reply, "failures", FAILURE, "failure")
        return timed, wrong

    def environments(self) -> dict[str, Environment]:
        return self._environments

    def described(self) -> dict[str, dict[str, Any]]:
        return self._described


class _WorkerTimer:
    """One sample is one request to the worker that owns the benchmark: synchronous, so the
    two processes alternate on the GPU."""

    def __init__(self, owner: dict[str, WorkerProcess]):
        self.owner = owner

    def begin_round(self, order: Sequence[str]) -> None:
        pass

    def sample(self, key: str) -> Callable[[], float]:
        ms = self.owner[key].ask("sample", key=key).get("ms")
        if not _is_time(ms):
            raise EnvironmentFailure(f"the {self.owner[key].side} worker answered a sample without a time")
        return lambda: float(ms)

    def end_round(self, order: Sequence[str]) -> None:
        pass


class _RoundTimer:
    """Every benchmark in one worker: a round is one request, which the worker times as an
    in-process run would (measure.GraphTimer, the round queued on the GPU in one go), so that
    the timing method's figures hold. The times are read once the round is answered."""

    def __init__(self, worker: WorkerProcess):
        self.worker = worker
        self.times: dict[str, float] = {}

    def begin_round(self, order: Sequence[str]) -> None:
        self.times = {}

    def sample(self, key: str) -> Callable[[], float]:
        return lambda: self.times[key]

    def end_round(self, order: Sequence[str]) -> None:
        ms = self.worker.ask("round", order=list(order)).get("ms")
        if not isinstance(ms, list) or len(ms) != len(order) or not all(_is_time(m) for m in ms):
            raise EnvironmentFailure(f"{self.worker.name} answered a round without a time for each sample")
        self.times = dict(zip(order, map(float, ms), strict=True))


def _side_of(key: str, held: Mapping[str, Any]) -> str:
    return "" if "" in held else key.partition(":")[0]


def _is_time(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


@dataclasses.dataclass(frozen=True)
class Chosen:
    """What a command line's names choose of a worker's subject (`_Side.choose`): the suites
    (loading.subject.Suite), the run's settings, and how many cases have something planned.
    Of a worker holding both sides of an A/B, also the base's benchmarks the head cannot run
    (as failures) and how the two sides' declarations differ."""

    suites: list[Any]
    settings: RunSettings
    cases: int
    unrun: list[Failure] = dataclasses.field(default_factory=list)
    declared: list[str] = dataclasses.field(default_factory=list)


def chosen_in(worker: WorkerProcess, selection: dict[str, Any], settings: dict[str, Any] | None = None) -> Chosen:
    """What the names choose of the worker's subject (`_Side.choose`); without `settings`, the
    one benchmark that `selection` names (`_Side.one`)."""
    worker.hello()
    if settings is None:
        reply = worker.ask("one", **selection)
    else:
        reply = worker.ask("choose", selection=selection, settings=settings)
    suites = [suite_from(suite) for suite in _list(worker.name, reply, "suites")]
    unrun = [validate_message(f"{worker.name}'s failure", f, FAILURE, "failure") for f in reply.get("unrun", [])]
    declared = reply.get("declared", [])
    if not isinstance(declared, list) or not all(isinstance(line, str) for line in declared):
        raise EnvironmentFailure(f"{worker.name} answered declarations that are not lines")
    return Chosen(suites, RunSettings.from_wire(reply.get("settings")), _count(worker, reply), unrun, declared)


def _count(worker: WorkerProcess, reply: dict[str, Any]) -> int:
    cases = reply.get("cases")
    if not isinstance(cases, int) or isinstance(cases, bool) or cases < 0:
        raise EnvironmentFailure(f"{worker.name} answered without the number of its cases")
    return cases


def _sides(worker: WorkerProcess) -> dict[str, dict[str, Any]]:
    """What the worker's hello says of each side it holds, by side: one, or both of an A/B."""
    sides = worker.hello().get("sides")
    expected = ("base", "head") if worker.side == BOTH else (worker.side,)
    if not isinstance(sides, dict) or tuple(sides) != expected:
        raise EnvironmentFailure(f"{worker.name} answered its hello without the sides it holds")
    return sides


def _tagged(worker: WorkerProcess, reply: dict[str, Any], key: str, schema: Any, what: str) -> list[tuple[str, Any]]:
    """Records of a worker's reply, each with its side (one the worker holds), validated."""
    held = _sides(worker)
    found = []
    for entry in _list(worker.name, reply, key):
        side = entry.get("side") if isinstance(entry, dict) else None
        if side not in held:
            raise EnvironmentFailure(f"{worker.name} answered a {what} of a side it does not hold")
        found.append((side, validate_message(f"{worker.name}'s {what}", entry.get("record"), schema, what)))
    return found


def _record(side: str, entry: dict[str, Any]) -> dict[str, Any]:
    value = entry.get("environment") if isinstance(entry, dict) else None
    if not isinstance(value, dict):
        raise EnvironmentFailure(f"a worker answered without the {side} side's environment")
    return value


def _list(name: str, reply: dict[str, Any], key: str) -> list[Any]:
    """A list from a reply of the worker `name`. A worker runs a side's kernels, so its messages
    are input like any file: validated before they become records."""
    value = reply.get(key)
    if not isinstance(value, list):
        raise EnvironmentFailure(f"{name} answered without a list of {key}")
    return value


def _described(side: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The subject as the worker describes it (groups.describe), checked like any message."""
    value = entry.get("subject")
    settings = validate_message(f"the {side} side's subject", value, SETTINGS, "subject")
    return {
        "subject": settings.subject,
        "error_bounds": settings.error_bounds,
        "under_test": settings.under_test,
        "bounds": settings.bounds,
        "sources": settings.sources,
    }


class _Forked:
    """A worker forked from the coordinator (children.fork_child), with the part of
    Popen's interface WorkerProcess uses."""

    def __init__(
        self,
        kernels: Path,
        side: str,
        declared_by: Path | None,
        log: IO[str],
        gpu: str | None = None,
        before: Callable[[], None] | None = None,
    ):
        requests_read, requests_write = os.pipe()
        replies_read, replies_write = os.pipe()

        def run(replies: IO[str]) -> None:
            if gpu is not None:  # pinned, before anything touches CUDA
                os.environ["CUDA_VISIBLE_DEVICES"] = gpu
            if before is not None:
                before()
            serve(kernels, side, sys.stdin, replies, declared_by)

        self.pid = fork_child(requests_read, log.fileno(), replies_write, run)
        os.close(requests_read)
        os.close(replies_write)
        self.requests: IO[str] = os.fdopen(requests_write, "w", buffering=1)
        self.replies: IO[str] = os.fdopen(replies_read)
        self.returncode: int | None = None
        # Two threads may wait on one worker: on Ctrl-C this one stops it (kill, then wait) while
        # the thread that asked it sees it end. One reaps it; the other must not ask again (ECHILD).
        self._reaping = threading.Lock()

    def poll(self) -> int | None:
        with self._reaping:
            if self.returncode is None:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (ended := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0.0)
            time.sleep(0.01)
        return ended

    def kill(self) -> None:
        if self.poll() is not None:
            return  # reaped already: its pid may be another process's now
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
