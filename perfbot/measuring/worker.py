"""A subject's kernels in a process of their own, timed when the coordinator asks.

`perfbot run`, `sample` and `ab` measure through workers. `perfbot run` measures in one worker on one GPU, so that
the subject's code (its import, inputs, references, implementations) never runs in the process
that decides: the coordinator takes the timings and the records from the worker's answers and
computes every statistic, verdict and exit code itself (docs/method.md, "What a subject can and
cannot do to a verdict"). When the two sides of `perfbot ab` need different Tritons (a pull
request that moves the pinned Triton commit), each side's kernels run in a worker whose
PYTHONPATH puts that side's Triton first, and the coordinator alternates the workers sample by
sample: it asks one worker for one timed sample, waits for it, then asks the next. The two never
share the GPU at once, and a change of the GPU's clocks reaches both sides of a round, as in an
in-process run.

Protocol: one JSON object per line. The coordinator writes requests to the worker's stdin; the
worker answers each on a channel of its own (its fd 1 and 2 point at its log, so a kernel that
prints cannot corrupt the stream). Every answer carries the nonce the hello gave, drawn by the
coordinator, so that a line the subject writes is no answer.

    {"op": "hello", "nonce": n}                      -> {"sides": {side: {"environment": {...}, "subject": {...}}}}
    {"op": "choose", "selection": {...}, "settings": {...}}
                                                     -> {"suites": [...], "settings": {...}, "cases": n}
                                                         (both sides held: also "unrun" and "declared")
    {"op": "one", "family": ..., "suite": ..., "case": ..., "kernel": ..., "variants": [...], "samples": n}
                                                     -> as "choose", for one benchmark (`perfbot sample`)
    {"op": "prepare", "suite": {...}, "settings": {...}, "rounds": bool}  (settings: RunSettings.to_wire())
        optionally "against": {name: [pick, ...]}    (the base's autotune picks: the head aligns to them)
        or "fixed": {key: [pick, ...]}               (the picks each benchmark runs: a confirming round)
                                                     -> {"ready": [key, ...], "failures": [tagged, ...],
                                                         "picks": {name: [pick, ...]}}
    {"op": "round", "order": [key, ...]}             -> {"ms": [0.123, ...]}  (one round, in that order)
    {"op": "sample", "key": key}                     -> {"ms": 0.123}
    {"op": "recapture", "keys": [key, ...]}          -> {}  (fresh captures for the next block)
    {"op": "finish", "samples": {key: [ms, ...]}, "throttled": [round, ...]}
                                                     -> {"benchmarks": [tagged, ...], "failures": [tagged, ...]}
    {"op": "quit"}                                   (no answer; the worker exits)

A tagged record is {"side": side, "record": {...}}: a worker may hold both sides of an A/B
(BOTH). Any request may be answered with {"error": message, "exit": code} instead ("option" naming the
command-line option of a name that chose nothing). The worker notes perfbot's code and the clocks
before it loads the subject (untouched.py) and looks again after every request (the clocks alone
after a round): a subject that changed them is refused, exit 2, as is one that set L2 aside for
persisting lines (l2_persistence.py). A worker that ends before it
answers (`os._exit` in the subject, a crash) is refused, exit 2, with how it ended.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from ..errors import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, BadInput, EnvironmentFailure, PerfbotError, unexpected
from ..loading.guard import stray
from ..loading.selection import BadChoice
from ..records.autotune import PICK, AutotunePick
from ..records.schema import validate_message
from .children import preimport
from .planning import RunSettings


def picks_of(side: str, reply: dict[str, Any]) -> dict[str, list[AutotunePick]]:
    """The autotune picks of a message, by benchmark: validated like any message."""
    value = reply.get("picks")
    if not isinstance(value, dict):
        raise EnvironmentFailure(f"the {side} worker answered without its autotune picks")
    found = {}
    for name, picks in value.items():
        if not isinstance(picks, list):
            raise EnvironmentFailure(f"the {side} worker answered autotune picks that are not a list")
        found[str(name)] = [validate_message(f"the {side} worker's autotune pick", p, PICK, "pick") for p in picks]
    return found


def suite_from(value: Any) -> Any:
    """A suite as `_suite_json` sent it (loading.subject.Suite), checked like any message: a
    worker runs a subject's code."""
    from ..loading.subject import FORWARD, MODES, Case, Suite

    try:
        cases = tuple(
            Case(
                str(c["suite"]),
                str(c["name"]),
                {str(k): int(v) for k, v in c["params"].items()},
                str(c["dtype"]),
                str(c.get("mode", FORWARD)),
            )
            for c in value["cases"]
        )
        if any(case.mode not in MODES for case in cases):
            raise ValueError("an unknown mode")
        implementations = tuple(str(name) for name in value["implementations"])
        return Suite(str(value["name"]), str(value["about"]), implementations, cases)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise EnvironmentFailure("a suite in a worker's message is not one") from None


def names_from_json(names: dict[str, Any]) -> dict[str, Any]:
    """Names and settings as JSON carried them (lists) as the library takes them (tuples)."""
    return {name: tuple(value) if isinstance(value, list) else value for name, value in names.items()}


def suite_json(suite: Any) -> dict[str, Any]:
    return {
        "name": suite.name,
        "about": suite.about,
        "implementations": list(suite.implementations),
        "cases": [dataclasses.asdict(c) for c in suite.cases],
    }


# The side name of a worker that holds both sides of an A/B with one Triton: the base's kernels
# (--declared-by) and the head's (--kernels), the head judged by the base's declarations.
BOTH = "base+head"


class _Side:
    """The worker's half: one side's kernels, or both sides' (BOTH), loaded in this process
    (runner.LocalSides), timed a round or a sample at a time when the coordinator asks."""

    def __init__(self, kernels: Path, side: str, declared_by: Path | None = None):
        self.kernels, self.side, self.declared_by = kernels, side, declared_by
        self.subjects: dict[str, Any] = {}
        self.missing: dict[str, str] = {}  # what the base declares and the head cannot run (BOTH)
        self.head_own: Any = None  # the head with its own declarations, to list what differs (BOTH)
        self.local: Any = None
        self.flush: Any = None
        self.timer: Any = None  # a case's measure.GraphTimer, made when it is prepared to be timed in rounds

    @property
    def subject(self) -> Any:
        """The subject whose declarations choose what is measured: the base's, where it is here."""
        return self.subjects.get("base") or next(iter(self.subjects.values()))

    def hello(self) -> dict[str, Any]:
        from ..compiling import toolchain
        from ..git import kernels_revision
        from ..loading import provenance
        from ..loading.declarations import judged_by_base
        from ..loading.package import load_subject
        from .environment import collect_environment
        from .groups import describe

        # Without a GPU the first case is refused (runner.LocalSides), after the names are chosen.
        toolchain.pin_toolchain()  # before the subject's kernels compile
        # The base first, where it is here: as every other command loads an A/B's two sides.
        base = load_subject(self.declared_by) if self.declared_by is not None else None
        loaded = load_subject(self.kernels)
        if base is None:
            self.subjects = {self.side: loaded}
        else:  # the head, judged by the base's declarations
            head, self.missing = judged_by_base(base, loaded)
            self.subjects = {"base": base, "head": head} if self.side == BOTH else {self.side: head}
            self.head_own = loaded
        if len(self.subjects) > 1:  # each side's code from its own checkout
            provenance.check({side: subject.sources for side, subject in self.subjects.items()})
        environment = collect_environment()
        sides = {
            side: {
                "environment": dataclasses.asdict(dataclasses.replace(environment, **kernels_revision(subject.path))),
                "subject": {**describe(subject.subject), "sources": subject.sources.recorded()},
            }
            for side, subject in self.subjects.items()
        }
        return {"sides": sides}

    def choose(self, selection: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
        """The suites and the run's settings that a command line's names choose of the subject
        (the base's, where it is here), with the number of cases planned (a progress bar's
        steps): chosen here, where the subject is loaded, so that the coordinator never imports
        it. `selection`: selection.chosen's names; `settings`: planning.settings_for's. Holding
        both sides of an A/B, also what the base judges that the head cannot run (`unrun`) and
        how the two sides' declarations differ (`declared`)."""
        from ..loading import declarations
        from ..loading.selection import chosen
        from .planning import plan, settings_for

        suites = chosen(self.subject, **names_from_json(selection))
        run = settings_for(self.subject, **names_from_json(settings))
        planned = plan(self.subject, suites, run, "base" if self.side == BOTH else "")
        reply = {"suites": [suite_json(suite) for suite in suites], "settings": run.to_wire(), "cases": len(planned)}
        if self.side == BOTH:
            flat = [p for group in planned for p in group]
            unrun = declarations.missing_failures(self.missing, flat)
            reply["unrun"] = [dataclasses.asdict(failure) for failure in unrun]
            reply["declared"] = declarations.differences(self.subject, self.head_own, suites)
        return reply

    def one(
        self,
        family: str | None,
        suite: str | None,
        case: str | None,
        kernel: str | None,
        variants: list[str],
        samples: int,
        mode: str | None = None,
    ) -> dict[str, Any]:
        """`choose` for one benchmark (`perfbot sample`): its suite cut down to its case and
        implementation, and settings that time that alone."""
        from ..loading.selection import BadChoice, known_implementations, one_benchmark
        from .planning import chosen_variants

        chosen_case, chosen_kernel = one_benchmark(self.subject, family, suite, case, kernel, mode)
        known_implementations(self.subject, (chosen_kernel,), "--kernel")
        run = RunSettings(
            samples=samples, variants=chosen_variants(self.subject.subject, variants), kernels=(chosen_kernel,)
        )
        if any(len(values) > 1 for _, values in run.variants):
            raise BadChoice("one value per parameter: sample times one benchmark", "--variant")
        whole = self.subject.suites[chosen_case.suite]
        cut = dataclasses.replace(whole, cases=(chosen_case,), implementations=(chosen_kernel,))
        return {"suites": [suite_json(cut)], "settings": run.to_wire(), "cases": 1}

    def prepare(
        self,
        suite: dict[str, Any],
        settings: dict[str, Any],
        against: dict[str, Any] | None = None,
        fixed: dict[str, Any] | None = None,
        rounds: bool = False,
    ) -> dict[str, Any]:
        """Check and capture a case; `against`, the base's picks to align the head to; `fixed`,
        the picks each benchmark is to run (a confirming round); `rounds`: timed a round at a
        time (`round`), else a sample at a time (`sample`)."""
        from . import l2_persistence, measure, runner

        l2_persistence.driver().reset()  # nothing set aside while the case is checked, captured and timed
        chosen = RunSettings.from_wire(settings)
        pinned = None if fixed is None else picks_of(self.side, {"picks": fixed})
        if self.local is None or self.local.settings != chosen or self.local.fixed != pinned:
            self.local = runner.LocalSides(self.subjects, chosen, pinned)  # the second A/B: the next seed
        self.local.against = None if against is None else picks_of("base", {"picks": against})
        self.timer = None  # the last case's graphs go with it
        keys, failed = self.local.prepare(suite_from(suite))
        self.timer = self.local.timer() if rounds and keys else None  # it uploads the graphs, untimed
        if keys and not rounds and self.flush is None:
            self.flush = measure.L2Flush()
        for key in keys if not rounds else ():  # the first replay uploads the graph; keep it out
            measure.time_once(self.local.captured[key], self.flush)
        picks = {
            r.planned.name: [dataclasses.asdict(p) for p in r.picks] for r in self.local.ready if not r.planned.arm
        }
        return {"ready": keys, "failures": _tagged(failed), "picks": picks}

    def round(self, order: list[str]) -> dict[str, Any]:
        """One round, every key in `order` timed as an in-process run times it (measure.GraphTimer:
        queued on the GPU in one go), with this process's own events and clock."""
        if self.timer is None or any(key not in self.local.captured for key in order) or not order:
            raise BadInput(f"no benchmark captured to be timed in rounds among {order!r}")
        self.timer.begin_round(order)
        pending = [self.timer.sample(key) for key in order]
        self.timer.end_round(order)
        return {"ms": [read() for read in pending]}

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
        for key in keys if self.timer is None else ():  # the first replay uploads the graph; keep it out
            measure.time_once(self.local.captured[key], self.flush)
        return {}

    def finish(self, samples: dict[str, list[float]], throttled: list[int]) -> dict[str, Any]:
        self.timer = None  # it holds the case's graphs, which finish lets go before it frees memory
        timed, wrong = self.local.finish(samples, throttled)
        return {"benchmarks": _tagged(timed), "failures": _tagged(wrong)}


def _tagged(records: Sequence[tuple[str, Any]]) -> list[dict[str, Any]]:
    """Records with the side each is of, as a message carries them."""
    return [{"side": side, "record": dataclasses.asdict(record)} for side, record in records]


def serve(kernels: Path, side: str, requests: IO[str], answers: IO[str], declared_by: Path | None = None) -> None:
    """The worker's loop: answer requests until "quit" or the end of them."""
    from . import l2_persistence
    from .untouched import Untouched

    preimport()  # every perfbot module it may use, noted untouched before the subject loads
    l2_persistence.start_clean()
    untouched = Untouched()
    handler = _Side(kernels, side, declared_by)
    nonce = None
    for line in requests:
        request = json.loads(line)
        op = request.pop("op")
        if op == "quit":
            break
        if op == "hello":
            nonce = request.pop("nonce", None)
        try:
            if op not in ("hello", "choose", "one", "prepare", "round", "sample", "recapture", "finish"):
                raise BadInput(f"unknown request {op!r}")
            answer = getattr(handler, op)(**request)
        except BadChoice as error:
            answer = {"error": error.reason, "exit": error.exit_code, "option": error.option, "choice": True}
        except PerfbotError as error:
            answer = {"error": str(error), "exit": error.exit_code}
        except Exception as error:  # noqa: BLE001 -- reported to the coordinator, which stops the run
            answer = {"error": unexpected(error), "exit": EXIT_ENVIRONMENT}
        except BaseException as error:  # noqa: BLE001 -- the subject's, outside a guarded call (Ctrl-C is ignored here)
            answer = {"error": stray(error), "exit": EXIT_BAD_INPUT}
        # Whatever the request came to, a subject that changed perfbot or a clock, or left L2
        # set aside, is refused for it.
        refused = _refusal(untouched, op)
        if refused is not None:
            answer = {"error": refused, "exit": 2}
        answers.write(json.dumps({**answer, "nonce": nonce}) + "\n")
        if refused is not None:
            break


def _refusal(untouched: Any, op: str) -> str | None:
    """Why the subject is refused after a request, or None. After a timed round only the clocks
    are looked at (the whole look takes milliseconds), and the L2 limit, a driver call of
    microseconds."""
    from . import l2_persistence

    return untouched.refusal(clocks_only=op in ("round", "sample")) or l2_persistence.residue()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m perfbot.measuring.worker", description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=Path, required=True, help="the side's kernels/ package")
    parser.add_argument("--side", required=True, help=f"base, head, or {BOTH} (both in this process)")
    parser.add_argument("--declared-by", type=Path, help="the base's kernels/ package, whose declarations judge")
    arguments = parser.parse_args(argv)
    # A Ctrl-C reaches the whole process group; the coordinator alone decides, and stops this one.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed goes to stderr, the coordinator's log of this worker
    serve(arguments.kernels, arguments.side, sys.stdin, answers, arguments.declared_by)
    for stream in (answers, sys.stdout, sys.stderr):
        stream.flush()
    # Done: what the subject left behind (atexit hooks, threads) does not hold the coordinator up.
    os._exit(0)


if __name__ == "__main__":
    # Run as perfbot.measuring.worker, the module untouched.py watches, not as a copy in __main__.
    from perfbot.measuring.worker import main as worker_main

    worker_main()
