"""The Triton a run measured with, set against the one the project pins (`[tool.perfbot]
triton-commit`): the same, another, or not to be told. A run with another Triton still runs;
the command warns, and the results record the pin and whether it held."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from ..records.run import Environment

# Release wheels carry no commit in their version; these are the commits their tags point to.
RELEASE_COMMITS = {"3.6.0": "7c56a5e40f7fd928dfd5c72902d5def0097db73a"}

Verdict = Literal["same", "different", "unknown"]


@dataclass(frozen=True)
class PinCheck:
    """`verdict` of the Triton (`version`, `commit` when known) against `pin`."""

    pin: str
    verdict: Verdict
    version: str | None
    commit: str | None

    @property
    def matches(self) -> bool | None:
        """True or False; None when it cannot be told."""
        return None if self.verdict == "unknown" else self.verdict == "same"

    @property
    def warning(self) -> str | None:
        """One line for the terminal when the pin does not hold, or cannot be told to; else None."""
        if self.verdict == "same":
            return None
        installed = f"Triton {self.version or 'of unknown version'}" + (
            f" (commit {self.commit})" if self.commit else " (commit unknown)"
        )
        release = pinned_release(self.pin)
        pinned = f"the Triton [tool.perfbot] triton-commit pins, {self.pin[:12]}" + (
            f" (Triton {release})" if release else ""
        )
        if self.verdict == "different":
            return f"{installed} is not {pinned}: its timings may not compare with results measured with the pin"
        return (
            f"{installed}: cannot tell whether it is {pinned}; "
            "set PERFBOT_TRITON_COMMIT to the commit it was built from"
        )


def pinned_release(pin: str) -> str | None:
    """The release whose tag points to `pin`, if it is one RELEASE_COMMITS knows."""
    return next((version for version, commit in RELEASE_COMMITS.items() if commit == pin), None)


def check(version: str | None, commit: str | None, pin: str) -> PinCheck:
    """Triton `version`, built from `commit` where known (a full SHA, or the abbreviation a source
    build's version holds), against the full commit `pin`. With no commit known, a pin that is a
    release's tag commit is compared by version; any other pin cannot be told."""
    if commit:
        verdict: Verdict = "same" if pin.startswith(commit.lower()) else "different"
    elif (release := pinned_release(pin)) is not None and version and version != "unknown":
        verdict = "same" if version == release else "different"
    else:
        verdict = "unknown"
    return PinCheck(pin, verdict, version, commit)


def recorded_check(environment: Environment, pin: str) -> PinCheck:
    """`check` of the Triton an environment recorded."""
    return check(environment.triton, environment.triton_commit, pin)


def with_pin(environment: Environment, pin: str) -> Environment:
    """The environment, recording `pin` and whether its Triton is the pinned one."""
    return dataclasses.replace(environment, triton_pin=pin, triton_pin_matches=recorded_check(environment, pin).matches)
