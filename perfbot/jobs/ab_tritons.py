"""Which Triton each side of an A/B runs: both the one installed here (in one worker), or each
side its own, in a worker process of its own (measuring/worker.py): given environments, or builds
of the commits the two sides pin."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadInput

SIDES = ("base", "head")


@dataclass(frozen=True)
class Tritons:
    """Which Triton each side gets: given environments (side -> directory), or builds of the
    pinned commits from a source repository, or (neither) the one installed here."""

    envs: dict[str, Path] = field(default_factory=dict)
    source: str | None = None
    cache: Path | None = None


def worker_specs(
    kernels: dict[str, Path], pins: dict[str, str], tritons: Tritons, rev: str
) -> dict[str, tuple[Path, Path | None, str | None]]:
    """Empty when both sides share the Triton installed here (measured in one worker); else,
    per side, what its worker process runs: (kernels, Triton environment or None, commit)."""
    if tritons.envs:
        return {side: (kernels[side], tritons.envs.get(side), None) for side in SIDES}
    if pins["base"] == pins["head"]:
        return {}
    source = _source_of_two(pins, tritons, rev)
    from ..measuring import triton_build

    return {
        side: (kernels[side], triton_build.environment(pins[side], source, tritons.cache), pins[side]) for side in SIDES
    }


def tritons_text(pins: dict[str, str], tritons: Tritons, rev: str) -> str:
    """Which Triton each side would get, in one line, as `worker_specs` decides, without building
    any (refused as it would be)."""
    if tritons.envs:
        given = ", ".join(f"{side} {tritons.envs.get(side) or 'the one installed here'}" for side in SIDES)
        return f"each side in a worker process of its own, with the Triton in: {given}"
    if pins["base"] == pins["head"]:
        return f"both sides pin {pins['base'][:12]}; the Triton installed here runs both, in one worker process"
    source = _source_of_two(pins, tritons, rev)
    return (
        f"the base pins {pins['base'][:12]} and the head {pins['head'][:12]}: both built from {source} "
        "(cached by commit), each side in a worker process with its own"
    )


def _source_of_two(pins: dict[str, str], tritons: Tritons, rev: str) -> str:
    """Where two pinned Tritons are built from; refused without one."""
    if tritons.source is None:
        raise BadInput(
            f"{rev} pins Triton {pins['base'][:12]} and the head {pins['head'][:12]}: each side needs "
            "its own; pass --triton-source REPO to build both, or --triton-env base=DIR --triton-env head=DIR"
        )
    return tritons.source
