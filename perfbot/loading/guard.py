"""Every call perfbot makes into a subject's code goes through `call`: importing the package, its
inputs, references, implementations, counts and config readers.

A subject that quits (`sys.exit`, or any BaseException, a KeyboardInterrupt it raises itself
included) or outlasts its time limit is refused in one line naming it (exit 2), never read as a
pass, a slowdown or a wrong result. An ordinary exception passes through: the caller knows whether
it is the subject's mistake or one implementation's failure.

A KeyboardInterrupt is the user's Ctrl-C, passed through untouched, only if a SIGINT reached this
process while the call ran: `_Interrupts` counts them. Anything else raised that KeyboardInterrupt
(a `raise KeyboardInterrupt`, `_thread.interrupt_main()`): the subject did. In the processes that
run the subject's code (subject_process.py, worker.py) SIGINT is ignored, so there every one is.

The limit is a SIGALRM timer in the main thread, whose handler raises `OutOfTime`, a
BaseException, so that the subject's own `except Exception` cannot swallow it; a call that
swallowed it anyway is refused all the same. A watchdog thread backs the timer up: if the call
has not returned a grace period after its limit (the subject caught OutOfTime and went on, or C
code holds the thread), the watchdog says the one line and ends the process with exit 2.
Off the main thread, where no signal can be had, the watchdog alone keeps the limit.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from ..errors import EXIT_BAD_INPUT, BadInput
from ..records.schema import clean

T = TypeVar("T")

# Defaults, documented in docs/subject.md ("Time limits"). Generous: on a CPU, in Triton's
# interpreter, one call of a quick suite's case can take tens of seconds.
IMPORT_LIMIT_S = 600.0
CALL_LIMIT_S = 600.0
# A call's limit where perfbot measures (run, ab, sample, bisect): a first call may compile and
# autotune for minutes (torch.compile with max-autotune), so only a call that never ends is stopped.
MEASURED_CALL_LIMIT_S = 3600.0
# What `perfbot check` gives the configs of one autotuned implementation on one case, together.
CONFIG_TIME_S = 300.0
MOST_GRACE_S = 10.0  # how long the watchdog waits past a limit before it ends the process


class OutOfTime(BaseException):
    """Raised in the main thread when a call into the subject outlasts its limit."""


class Refused(BadInput):
    """The subject's code quit or outlasted its limit: refused, never read as its result."""


_active = threading.local()  # a call in progress on this thread: nested calls run under its limit


def call(what: str, fn: Callable[[], T], limit: float | None = None) -> T:
    """`fn()`, the subject's code, named by `what` in the line said if it quits ("subject 't':
    implementation 'x' (case s/c)"); with `limit` seconds at most, if given."""
    outer = getattr(_active, "on", False)
    _active.on = True
    expired = threading.Event()
    sigints = _Interrupts.seen
    try:
        with _limited(what, None if outer else limit, expired), _Interrupts.counted(outer):
            result = fn()  # nested: the enclosing call's limit and count cover it
        if expired.is_set():
            raise OutOfTime  # the subject caught it and returned anyway
        return result
    except KeyboardInterrupt as error:
        if _Interrupts.seen != sigints:
            raise  # the user's Ctrl-C
        raise Refused(f"{what} {_late(limit) if expired.is_set() else _quit(error)}") from None
    except OutOfTime:
        if not expired.is_set():
            raise  # the enclosing call's limit, which that call reports
        raise Refused(f"{what} {_late(limit)}") from None
    except Exception:
        if expired.is_set():  # raised while handling OutOfTime
            raise Refused(f"{what} {_late(limit)}") from None
        raise
    except BaseException as error:  # noqa: BLE001 -- sys.exit and the like, from the subject's code
        raise Refused(f"{what} {_late(limit) if expired.is_set() else _quit(error)}") from None
    finally:
        _active.on = outer


class _Interrupts:
    """How many SIGINTs this process has received during guarded calls: a KeyboardInterrupt is
    the user's only if this moved while the call ran."""

    seen = 0

    @classmethod
    @contextmanager
    def counted(cls, nested: bool) -> Iterator[None]:
        """Within it, SIGINTs are counted before the handler in place runs (Python's own raises
        KeyboardInterrupt). Signals reach the main thread alone: off it, or where SIGINT is ignored
        (a subject's process) or ends the process, no SIGINT can raise anything, so none is counted."""
        previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
        if nested or not callable(previous):
            yield
            return
        handler = previous

        def count(signum: int, frame: Any) -> Any:
            cls.seen += 1
            return handler(signum, frame)

        signal.signal(signal.SIGINT, count)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)


class Guarded(functools.partial):
    """A partial whose every call goes through `call`, without a limit: for the calls perfbot
    makes later, as in a CUDA graph's capture. Still a partial (`func`, `args`, `keywords`), so
    that what reads one (provenance.py) reads it as well."""

    what: str

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return call(self.what, lambda: super(Guarded, self).__call__(*args, **kwargs))


def guarded(what: str, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Guarded:
    """`functools.partial(fn, *args, **kwargs)`, guarded: see `Guarded`."""
    partial = Guarded(fn, *args, **kwargs)
    partial.what = what
    return partial


def stray(error: BaseException) -> str:
    """The refusal of a quit (a BaseException) that reached a process running the subject's code
    outside any guarded call: only the subject raises one there, since that process ignores Ctrl-C."""
    return f"code perfbot ran for the subject {_quit(error)} outside a guarded call"


def _quit(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        code = "" if error.code is None else clean(repr(error.code), 100)
        return f"called sys.exit({code})"
    text = clean(" ".join(str(error).split()), 200)
    return f"raised {type(error).__name__}" + (f": {text}" if text else "")


def _late(limit: float | None) -> str:
    return f"did not finish within its time limit of {limit:g} s (docs/subject.md, 'Time limits')"


@contextmanager
def _limited(what: str, limit: float | None, expired: threading.Event) -> Iterator[None]:
    """Within it, `OutOfTime` is raised in the main thread once `limit` seconds have passed (and
    `expired` set); a watchdog ends the process if the block is still running a grace period later."""
    if limit is None:
        yield
        return
    done = threading.Event()
    in_main = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    watchdog = threading.Thread(
        target=_watch, args=(done, limit + grace(limit) if in_main else limit, f"{what} {_late(limit)}"), daemon=True
    )

    def expire(signum: int, frame: Any) -> None:
        expired.set()
        raise OutOfTime

    previous = signal.signal(signal.SIGALRM, expire) if in_main else None
    try:
        if in_main:
            signal.setitimer(signal.ITIMER_REAL, limit)
        watchdog.start()
        yield
    finally:
        done.set()
        if in_main:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)


def grace(limit: float) -> float:
    """How long the watchdog waits past a call's limit before it ends the process: as long as the
    limit, MOST_GRACE_S at most (docs/subject.md, 'Time limits')."""
    return min(MOST_GRACE_S, limit)


def _watch(done: threading.Event, seconds: float, line: str) -> None:
    """The backstop: the main thread cannot be stopped from here, so the process ends, in the
    one line the CLI would have said (cli.py cannot: its thread is the one held)."""
    if not done.wait(seconds):
        sys.stderr.write(f"perfbot: error: {line}\n")
        sys.stderr.flush()
        os._exit(EXIT_BAD_INPUT)
