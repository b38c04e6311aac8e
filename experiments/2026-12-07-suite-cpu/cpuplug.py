"""A pytest plugin recording each test's CPU time: its own (RUSAGE_SELF) and its waited-for
children's (RUSAGE_CHILDREN), with its wall time, one JSON line per test in CPU_OUT/cpu-<pid>.jsonl.

    PYTHONPATH=experiments/2026-12-07-suite-cpu CPU_OUT=/tmp/cpu .venv/bin/python -m pytest -p cpuplug ...
    python3 experiments/2026-12-07-suite-cpu/per_module.py /tmp/cpu

CPU-seconds, not wall time: on a shared 2-core machine the wall time of one test says little, and
CI's suite is bound by its two cores, so what the whole run costs is the sum of these."""

import json
import os
import resource
import time
from pathlib import Path

import pytest

OUT = Path(os.environ.get("CPU_OUT", "/tmp/cpu"))


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    own, children, started = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), time.time()
    yield
    row = {
        "test": item.nodeid,
        "start": round(started, 2),
        "wall": round(time.time() - started, 2),
        "self": round(_cpu(resource.RUSAGE_SELF) - own, 2),
        "children": round(_cpu(resource.RUSAGE_CHILDREN) - children, 2),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / f"cpu-{os.getpid()}.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")
