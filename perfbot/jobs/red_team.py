"""`perfbot selftest --exploits`: the control and each of exploits.EXPLOITS run as `perfbot run`
runs a project, its verdict taken from what that run would have exited with. An exploit is caught
when the run fails (a wrong result, exit 1, with the cheat named; or a refusal, exit 2), saying
one of the words of the defense meant to catch it, and the honest kernel beside it is not what
failed. The control, the same subject with no trick, must pass: else the catches say nothing."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_REGRESSION, PerfbotError
from ..records.run import Failure, Results
from .exploits import CONTROL, EXPLOITS, Exploit
from .run import measure_package

# Elements of the subjects' one case: a vector of 64 MiB on a GPU, so that an honest kernel takes
# tens of microseconds and a cheat's saving shows; a small one on the CPU, where the kernel runs in
# Triton's interpreter.
ELEMENTS = {"cuda": 1 << 24, "cpu": 1 << 12}


@dataclass(frozen=True)
class Verdict:
    """What perfbot made of one exploit (or the control): the exit code its run would have had
    (None: not run, as on a machine that cannot express it), whether that catches it by the
    defense meant for it, and what was said."""

    exploit: Exploit
    exit_code: int | None
    caught: bool
    said: str

    def to_json(self) -> dict[str, Any]:
        return {
            "exploit": self.exploit.name,
            "does": self.exploit.does,
            "exit_code": self.exit_code,
            "caught": self.caught,
            "said": self.said,
        }


@dataclass(frozen=True)
class RedTeam:
    """The control's verdict and each exploit's."""

    control: Verdict
    verdicts: list[Verdict]

    @property
    def passed(self) -> bool:
        """The control passed, and every exploit that ran was caught."""
        ran = [v for v in self.verdicts if v.exit_code is not None]
        return self.control.exit_code == EXIT_OK and all(v.caught for v in ran)


def try_exploits(
    device: str,
    gpus: Sequence[Any],
    samples: int,
    on_exploit: Callable[[int, str], None] = lambda index, name: None,
    exploits: Sequence[Exploit] = EXPLOITS,
) -> RedTeam:
    """The control's and each exploit's verdict on `device` ("cuda", or the CPU tests' stand-in),
    in order; `on_exploit(index, name)` is told of each one as it starts (the control is 0)."""
    with tempfile.TemporaryDirectory(prefix="perfbot-exploits-") as scratch:

        def judged(index: int, exploit: Exploit) -> Verdict:
            on_exploit(index, exploit.name)
            if exploit.gpu_only and device != "cuda":
                return Verdict(exploit, None, False, "not run: it needs a CUDA GPU")
            package = Path(scratch) / f"exploit_{index}"
            package.mkdir()
            (package / "__init__.py").write_text(exploit.subject(ELEMENTS.get(device, ELEMENTS["cpu"])))
            return _judged(exploit, package, gpus, samples)

        control = judged(0, CONTROL)
        return RedTeam(control, [judged(index, exploit) for index, exploit in enumerate(exploits, 1)])


def _judged(exploit: Exploit, package: Path, gpus: Sequence[Any], samples: int) -> Verdict:
    selection = {"suite_names": ("exploits",), "case_names": (), "every_suite": False, "family_names": ()}
    settings = {
        "samples": samples,
        "warmup": 3,
        "seed": 0,
        "variants": (),
        "kernel_names": (),
        "skipped_kernels": (),
        "keep_sass": False,
        "case_names": (),
    }
    try:
        result = measure_package(package, (selection, settings), gpus)
    except PerfbotError as refused:
        # Exit 3 says the machine failed the job, which judges nothing.
        judging = refused.exit_code in (EXIT_REGRESSION, EXIT_BAD_INPUT)
        return _verdict(exploit, refused.exit_code, str(refused), judging)
    failed = {failure.kernel: _reason(failure) for failure in result.failures}
    if any(kernel != "cheat" for kernel in failed):  # the trick broke what it sits beside
        said = "; ".join(f"{kernel}: {reason}" for kernel, reason in sorted(failed.items()))
        return Verdict(exploit, EXIT_REGRESSION, False, f"not the cheat alone failed: {said}")
    if "cheat" in failed:
        return _verdict(exploit, EXIT_REGRESSION, failed["cheat"], True)
    return Verdict(exploit, EXIT_OK, False, f"passed as right: {_timed(result)}")


def _verdict(exploit: Exploit, exit_code: int, said: str, judging: bool) -> Verdict:
    """A failed run's verdict: caught only by a judging exit code and the words of a defense meant
    for this exploit; a failure for another reason (a bug of the subject's on this GPU, a
    deadline) is said as it was, not counted."""
    caught = judging and any(words in said for words in exploit.caught_by)
    return Verdict(exploit, exit_code, caught, said if caught else f"failed for another reason: {said}")


def _timed(result: Results) -> str:
    medians = {bench.kernel: bench.median_ms for bench in result.benchmarks}
    return ", ".join(f"{kernel} {medians[kernel]:.4g} ms" for kernel in ("cheat", "honest") if kernel in medians)


def _reason(failure: Failure) -> str:
    """A failure's reason, with its relative error where it has one."""
    if failure.relative_error is None or failure.error_bound is None:
        return failure.reason
    return f"{failure.reason} (relative error {failure.relative_error:.3g}, at most {failure.error_bound:.3g})"
