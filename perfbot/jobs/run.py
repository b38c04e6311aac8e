"""One run of a kernels package, as `perfbot run` takes it: the subject loaded, checked and timed
in a worker process (one per GPU across several), the statistics and the records here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..records.run import Results

# Told the number of steps a run will take once its suites are chosen; gives back what is told of
# each step done (a label and how many steps).
Started = Callable[[int], Callable[[str, int], None]]


def measure_package(
    kernels: Path,
    names: tuple[dict[str, Any], dict[str, Any]],
    gpus: Sequence[Any],
    started: Started = lambda total: lambda label, steps: None,
) -> Results:
    """The run of `kernels` on `gpus` (shards.Gpu), the suites and settings chosen by `names` (a
    selection and settings as options.Measuring.names gives them). A subject that ends, forges
    or patches its worker raises PerfbotError (exit 2); wrong results are the run's failures."""
    from ..measuring.planning import case_steps
    from ..measuring.recording import Measurement
    from ..measuring.runner import measure_sides
    from ..measuring.shards import Job, measure_sharded
    from ..measuring.worker_sides import WorkerSides, chosen_in, workers

    # The subject's code runs in a worker process, never here: this process decides (worker.py).
    with workers({"": (kernels, None, None)}, fork=True) as worker:
        chosen = chosen_in(worker[""], *names)
        advance = started(chosen.cases * case_steps(chosen.settings))
        if len(gpus) > 1:
            worker[""].close()  # each GPU's worker loads the subject for itself (shards.py)
            return measure_sharded(Job({"": kernels}, chosen.settings), chosen.suites, gpus, advance)[""]
        measurement = Measurement(chosen.suites, chosen.settings)
        return measure_sides(WorkerSides(worker, chosen.settings), measurement, advance)[""]
