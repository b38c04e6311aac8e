"""One side of an A/B run in a process of its own.

When the two sides of `perfbot ab` need different Tritons (a pull request that moves
the pinned Triton commit), each side's kernels run in a worker process whose PYTHONPATH puts
that side's Triton first. The coordinator alternates the workers sample by sample: it asks one
worker for one timed sample, waits for it, then asks the next. The two never share the GPU at
once, and a change of the GPU's clocks reaches both sides of a round, as in an in-process run.

Protocol: one JSON object per line. The coordinator writes requests to the worker's stdin; the
worker answers each on its own copy of stdout (its fd 1 points at stderr, so a kernel that
prints cannot corrupt the stream).

    {"op": "hello"}                                  -> {"environment": {...}}
    {"op": "prepare", "suite": {...}, "settings": {...}}  (settings: RunSettings.to_wire())
        optionally "against": {name: [pick, ...]}    (the base's autotune picks: the head aligns to them)
        or "fixed": {key: [pick, ...]}               (the picks each benchmark runs: a confirming round)
                                                     -> {"ready": [key, ...], "failures": [...],
                                                         "picks": {name: [pick, ...]}}
    {"op": "sample", "key": key}                     -> {"ms": 0.123}
    {"op": "recapture", "keys": [key, ...]}          -> {}  (fresh captures for the next block)
    {"op": "finish", "samples": {key: [ms, ...]}, "throttled": [round, ...]}
                                                     -> {"benchmarks": [...], "failures": [...]}
    {"op": "quit"}                                   (no answer; the worker exits)

Any request may be answered with {"error": message, "exit": code} instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

from ..errors import EXIT_ENVIRONMENT, BadInput, EnvironmentFailure, PerfbotError, WrongResult
from ..records.autotune import PICK, AutotunePick
from ..records.run import BENCHMARK, ENVIRONMENT, FAILURE, SETTINGS, Benchmark, Environment, Failure, variant_name
from ..records.schema import validate_message
from .planning import RunSettings

WORKER_COMMAND = (sys.executable, "-m", "perfbot.measuring.worker")
# After measure.L2_FLUSH (measure imports torch, which the coordinator loads only when it runs).
TIMING = (
    "one CUDA-graph replay per sample, {flush}; one worker process per side, the sides alternating sample by sample"
)
_ERRORS: dict[object, type[PerfbotError]] = {1: WrongResult, 2: BadInput, 3: EnvironmentFailure}


class WorkerProcess:
    """The coordinator's handle on one worker: start it, ask it things, stop it."""

    def __init__(
        self,
        side: str,
        kernels: Path,
        triton_env: Path | None = None,
        command: Sequence[str] = WORKER_COMMAND,
        triton_commit: str | None = None,
        gpu: str | None = None,
        declared_by: Path | None = None,
    ):
        self.side = side
        env = dict(os.environ)
        if gpu is not None:  # a sharded A/B: this GPU's pair of workers (shards.py)
            env["CUDA_VISIBLE_DEVICES"] = gpu
        if triton_env is not None:
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(triton_env), env.get("PYTHONPATH")]))
            # A commit set for this process's Triton does not describe the other one.
            env.pop("PERFBOT_TRITON_COMMIT", None)
        if triton_commit is not None:
            env["PERFBOT_TRITON_COMMIT"] = triton_commit
        self._log = tempfile.TemporaryFile(mode="w+")
        try:
            self._process = subprocess.Popen(
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
        if self._process.stdin is None or self._process.stdout is None:  # both are pipes, as asked above
            raise EnvironmentFailure(f"the {side} worker has no pipes to talk through")
        self._requests: IO[str] = self._process.stdin
        self._replies: IO[str] = self._process.stdout

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        try:
            self._requests.write(json.dumps({"op": op, **fields}) + "\n")
            self._requests.flush()
            line = self._replies.readline()
        except (BrokenPipeError, OSError):
            line = ""
        if not line:
            raise EnvironmentFailure(f"the {self.side} worker died ({self._exit_status()}): {self._log_tail()}")
        try:
            reply = json.loads(line)
        except ValueError:
            raise EnvironmentFailure(f"the {self.side} worker answered with something that is not JSON") from None
        if not isinstance(reply, dict):
            raise EnvironmentFailure(f"the {self.side} worker answered with something that is not an object")
        if "error" in reply:
            raise _ERRORS.get(reply.get("exit"), EnvironmentFailure)(f"{self.side} worker: {reply['error']}")
        return reply

    def close(self) -> None:
        if self._process.poll() is None:
            try:
                self._requests.write(json.dumps({"op": "quit"}) + "\n")
                self._requests.close()
                self._process.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self._process.kill()
                self._process.wait()
        self._log.close()

    def kill(self) -> None:
        """Stop it now, mid-request (Ctrl-C in the coordinator)."""
        self._process.kill()
        self._process.wait()

    def _exit_status(self) -> str:
        try:
            return f"exit {self._process.wait(timeout=10)}"
        except subprocess.TimeoutExpired:
            return "no answer"

    def _log_tail(self, lines: int = 5) -> str:
        self._log.seek(0)
        tail = [line.rstrip() for line in self._log.read().splitlines() if line.strip()][-lines:]
        return " | ".join(tail) or "(nothing on stderr)"


@contextmanager
def workers(
    specs: dict[str, tuple[Path, Path | None, str | None]],
    command: Sequence[str] | None = None,
    gpu: str | None = None,
) -> Iterator[dict[str, WorkerProcess]]:
    """Started workers by side, from (kernels, triton environment or None, Triton commit or None),
    pinned to `gpu` (a CUDA_VISIBLE_DEVICES entry) if given; all stopped afterwards."""
    with ExitStack() as stack:
        started: dict[str, WorkerProcess] = {}
        base = specs["base"][0] if "base" in specs else None
        try:
            for side, (kernels, triton_env, commit) in specs.items():
                # The head runs under the base's declarations (declarations.py): its worker loads both.
                declared_by = base if side == "head" else None
                started[side] = WorkerProcess(
                    side, kernels, triton_env, command or WORKER_COMMAND, commit, gpu, declared_by
                )
                stack.callback(started[side].close)
            yield started
        except KeyboardInterrupt:  # the workers ignore Ctrl-C (main): they stop now, not after a request
            for process in started.values():
                process.kill()
            raise


class WorkerSides:
    """The sides of an A/B run in worker processes (runner.Sides): per case, every worker checks
    and captures its benchmarks; each sample is one request to the worker that owns it, so the
    two never share the GPU at once."""

    def __init__(
        self, workers: dict[str, WorkerProcess], settings: RunSettings, fixed: Mapping[str, Any] | None = None
    ):
        """`fixed`: the autotune picks each benchmark is to run, by planned key (a confirming
        round's, alignment.fix)."""
        from . import measure

        self.timing = TIMING.format(flush=measure.L2_FLUSH)
        self.workers, self.settings, self.fixed = workers, settings, fixed
        self.names = tuple(workers)
        self.owner: dict[str, WorkerProcess] = {}
        hellos = {side: w.ask("hello") for side, w in workers.items()}
        self._environments = {
            side: validate_message(f"the {side} worker's environment", _record(side, reply), ENVIRONMENT, "environment")
            for side, reply in hellos.items()
        }
        self._described = {side: _described(side, reply) for side, reply in hellos.items()}

    def prepare(self, case: Any) -> tuple[list[str], list[tuple[str, Failure]]]:
        self.owner, failed = {}, []
        picks: dict[str, list[dict[str, Any]]] | None = None  # the base's, that the head is aligned to
        for side, worker in self.workers.items():  # the base first
            extra: dict[str, Any] = {}
            if self.fixed is not None:
                extra["fixed"] = {
                    key: [dataclasses.asdict(p) for p in chosen]
                    for key, chosen in self.fixed.items()
                    if key.startswith(f"{side}:")
                }
            elif side == "head" and picks is not None:
                extra["against"] = picks
            reply = worker.ask("prepare", suite=_suite_json(case), settings=self.settings.to_wire(), **extra)
            self.owner.update({str(key): worker for key in _list(side, reply, "ready")})
            failed += [(side, failure) for failure in _failures(side, reply)]
            if side == "base":
                picks = {name: [dataclasses.asdict(p) for p in ps] for name, ps in _picks(side, reply).items()}
        return list(self.owner), failed

    def timer(self) -> Any:
        return _WorkerTimer(self.owner)

    def recapture(self, keys: list[str]) -> None:
        for worker in self.workers.values():
            mine = [key for key in keys if self.owner.get(key) is worker]
            if mine:
                worker.ask("recapture", keys=mine)

    def finish(
        self, samples: dict[str, list[float]], throttled: list[int]
    ) -> tuple[list[tuple[str, Benchmark]], list[tuple[str, Failure]]]:
        timed, wrong = [], []
        for side, worker in self.workers.items():
            mine = {key: values for key, values in samples.items() if self.owner.get(key) is worker}
            reply = worker.ask("finish", samples=mine, throttled=throttled)
            timed += [
                (side, validate_message(f"the {side} worker's benchmark", b, BENCHMARK, "benchmark"))
                for b in _list(side, reply, "benchmarks")
            ]
            wrong += [(side, failure) for failure in _failures(side, reply)]
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
        if isinstance(ms, bool) or not isinstance(ms, (int, float)):
            raise EnvironmentFailure(f"the {self.owner[key].side} worker answered a sample without a time")
        return lambda: float(ms)

    def end_round(self, order: Sequence[str]) -> None:
        pass


def _record(side: str, reply: dict[str, Any]) -> dict[str, Any]:
    value = reply.get("environment")
    if not isinstance(value, dict):
        raise EnvironmentFailure(f"the {side} worker answered without its environment")
    return value


def _list(side: str, reply: dict[str, Any], key: str) -> list[Any]:
    """A list from a worker's reply. A worker runs a side's kernels, so its messages are input
    like any file: validated before they become records."""
    value = reply.get(key)
    if not isinstance(value, list):
        raise EnvironmentFailure(f"the {side} worker answered without a list of {key}")
    return value


def _failures(side: str, reply: dict[str, Any]) -> list[Failure]:
    return [
        validate_message(f"the {side} worker's failure", f, FAILURE, "failure") for f in _list(side, reply, "failures")
    ]


def _picks(side: str, reply: dict[str, Any]) -> dict[str, list[AutotunePick]]:
    """The autotune picks of a worker's reply, by benchmark: validated like any message."""
    value = reply.get("picks")
    if not isinstance(value, dict):
        raise EnvironmentFailure(f"the {side} worker answered without its autotune picks")
    found = {}
    for name, picks in value.items():
        if not isinstance(picks, list):
            raise EnvironmentFailure(f"the {side} worker answered autotune picks that are not a list")
        found[str(name)] = [validate_message(f"the {side} worker's autotune pick", p, PICK, "pick") for p in picks]
    return found


def _described(side: str, reply: dict[str, Any]) -> dict[str, Any]:
    """The subject as the worker describes it (groups.describe), checked like any message."""
    value = reply.get("subject")
    settings = validate_message(f"the {side} worker's subject", value, SETTINGS, "subject")
    return {
        "subject": settings.subject,
        "error_bounds": settings.error_bounds,
        "under_test": settings.under_test,
        "bounds": settings.bounds,
        "sources": settings.sources,
    }


def _suite_json(suite: Any) -> dict[str, Any]:
    return {
        "name": suite.name,
        "about": suite.about,
        "implementations": list(suite.implementations),
        "cases": [dataclasses.asdict(c) for c in suite.cases],
    }


class _Side:
    """The worker's half: one side's kernels, loaded in this process (runner.LocalSides), each
    sample timed when the coordinator asks."""

    def __init__(self, kernels: Path, side: str, declared_by: Path | None = None):
        self.kernels, self.side, self.declared_by = kernels, side, declared_by
        self.local: Any = None
        self.flush: Any = None

    def hello(self) -> dict[str, Any]:
        from ..compiling import toolchain
        from ..git import kernels_revision
        from ..loading.declarations import judged_by_base
        from ..loading.package import load_subject
        from .environment import collect_environment
        from .groups import describe
        from .runner import gpu_device

        gpu_device()  # refused without a GPU, before anything loads
        toolchain.pin_toolchain()  # before the subject's kernels compile
        self.subject = load_subject(self.kernels)
        if self.declared_by is not None:  # the head, judged by the base's declarations
            self.subject, _ = judged_by_base(load_subject(self.declared_by), self.subject)
        environment = dataclasses.replace(collect_environment(), **kernels_revision(self.kernels))
        subject = {**describe(self.subject.subject), "sources": self.subject.sources.recorded()}
        return {"environment": dataclasses.asdict(environment), "subject": subject}

    def prepare(
        self,
        suite: dict[str, Any],
        settings: dict[str, Any],
        against: dict[str, Any] | None = None,
        fixed: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Check and capture a case; `against`, the base's picks to align the head to; `fixed`,
        the picks each benchmark is to run (a confirming round)."""
        from ..loading.subject import Case, Suite
        from . import measure, runner

        chosen = RunSettings.from_wire(settings)
        pinned = None if fixed is None else _picks(self.side, {"picks": fixed})
        if self.local is None or self.local.settings != chosen or self.local.fixed != pinned:
            self.local = runner.LocalSides({self.side: self.subject}, chosen, pinned)  # the second A/B: the next seed
        self.local.against = None if against is None else _picks("base", {"picks": against})
        cases = tuple(Case(**c) for c in suite["cases"])
        keys, failed = self.local.prepare(Suite(suite["name"], suite["about"], tuple(suite["implementations"]), cases))
        if keys and self.flush is None:
            self.flush = measure.L2Flush()
        for key in keys:  # the first replay uploads the graph; keep it out
            measure.time_once(self.local.captured[key], self.flush)
        picks = {
            variant_name(r.planned.kernel, r.planned.variant): [dataclasses.asdict(p) for p in r.picks]
            for r in self.local.ready
            if not r.planned.arm
        }
        return {"ready": keys, "failures": [dataclasses.asdict(f) for _, f in failed], "picks": picks}

    def sample(self, key: str) -> dict[str, Any]:
        from . import measure

        if self.local is None or key not in self.local.captured:
            raise BadInput(f"no captured benchmark {key!r}")
        return {"ms": measure.time_once(self.local.captured[key], self.flush)}

    def recapture(self, keys: list[str]) -> dict[str, Any]:
        from . import measure

        if self.local is None or any(key not in self.local.captured for key in keys):
            raise BadInput(f"no captured benchmark among {keys!r}")
        self.local.recapture(keys)
        for key in keys:  # the first replay uploads the graph; keep it out
            measure.time_once(self.local.captured[key], self.flush)
        return {}

    def finish(self, samples: dict[str, list[float]], throttled: list[int]) -> dict[str, Any]:
        timed, wrong = self.local.finish(samples, throttled)
        return {
            "benchmarks": [dataclasses.asdict(b) for _, b in timed],
            "failures": [dataclasses.asdict(f) for _, f in wrong],
        }


def serve(kernels: Path, side: str, requests: IO[str] = sys.stdin, declared_by: Path | None = None) -> None:
    """The worker's loop: answer requests until "quit" or the end of stdin."""
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to stderr, the coordinator's log of this worker
    handler = _Side(kernels, side, declared_by)
    for line in requests:
        request = json.loads(line)
        op = request.pop("op")
        if op == "quit":
            break
        try:
            known = ("hello", "prepare", "sample", "recapture", "finish")
            answer = getattr(handler, op)(**request) if op in known else None
            if answer is None:
                raise BadInput(f"unknown request {op!r}")
        except PerfbotError as error:
            answer = {"error": str(error), "exit": error.exit_code}
        except Exception as error:  # noqa: BLE001 -- reported to the coordinator, which stops the run
            answer = {"error": f"{type(error).__name__}: {error}", "exit": EXIT_ENVIRONMENT}
        answers.write(json.dumps(answer) + "\n")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m perfbot.measuring.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=Path, required=True, help="the side's kernels/ package")
    parser.add_argument("--side", required=True, help="base or head")
    parser.add_argument("--declared-by", type=Path, help="the base's kernels/ package, whose declarations judge")
    arguments = parser.parse_args(argv)
    # A Ctrl-C reaches the whole process group; the coordinator alone decides, and stops this one.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(arguments.kernels, arguments.side, declared_by=arguments.declared_by)


if __name__ == "__main__":
    main()
