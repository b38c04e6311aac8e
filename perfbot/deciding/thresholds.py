"""thresholds.yaml: the regression policy, loaded into a validated object."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Field, TypeAdapter
from typing_extensions import TypedDict

from ..errors import BadInput
from ..records.schema import MAX_ITEMS, MAX_SAMPLES, Dim, IntOnly, Name, load_yaml, validate

VERSION = 1
_STRICT = ConfigDict(extra="forbid", strict=True, defer_build=True)
# What a project without a thresholds.yaml is judged with: the policy of perfbot's own repository,
# shipped with the package (tests/test_init.py keeps the two files equal).
DEFAULT_PATH = Path(__file__).with_name("default-thresholds.yaml")
DEFAULT_NOTE = (
    "the checkout that ran this has no thresholds.yaml: judged with perfbot's defaults "
    "(default-thresholds.yaml, the policy of perfbot's own repository)"
)


class _RuleFields(TypedDict, total=False):
    __pydantic_config__ = _STRICT  # type: ignore[misc]

    fail_percent: Annotated[float, Field(gt=0, lt=100)]
    warn_percent: Annotated[float, Field(ge=0, lt=100)]
    alpha: Annotated[float, Field(gt=0, lt=1)]
    min_samples: Annotated[int, Field(ge=3, le=MAX_SAMPLES)]


class _Defaults(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]

    fail_percent: Annotated[float, Field(gt=0, lt=100)]
    warn_percent: Annotated[float, Field(ge=0, lt=100)]
    alpha: Annotated[float, Field(gt=0, lt=1)]
    min_samples: Annotated[int, Field(ge=3, le=MAX_SAMPLES)]


class _Match(TypedDict, total=False):
    __pydantic_config__ = _STRICT  # type: ignore[misc]

    kernel: Name
    suite: Name
    dtype: Name
    gpu: Name
    shape: Annotated[dict[Name, Dim], Field(min_length=1, max_length=16)]
    under_ms: Annotated[float, Field(gt=0)]  # the baseline's median time is under this
    interleaved: bool  # only for (or only not for) the two sides of one interleaved A/B run


class _Override(_RuleFields):
    match: Annotated[_Match, Field(min_length=1)]


class _File(TypedDict):
    __pydantic_config__ = _STRICT  # type: ignore[misc]

    version: Annotated[Literal[1], IntOnly]
    defaults: _Defaults
    interleaved: NotRequired[_RuleFields]
    overrides: NotRequired[Annotated[list[_Override], Field(max_length=MAX_ITEMS)]]


_FILE = TypeAdapter(_File)


@dataclass(frozen=True)
class Rule:
    """What counts as a regression for one benchmark."""

    fail_percent: float  # a significant slowdown beyond this fails the check
    warn_percent: float  # a significant slowdown beyond this is reported
    alpha: float  # significance level, after Benjamini-Hochberg adjustment
    min_samples: int  # fewer samples on either side: inconclusive


@dataclass(frozen=True)
class Override:
    match: dict[str, Any]
    changes: dict[str, Any]

    def applies(self, facts: dict[str, Any]) -> bool:
        """Whether every key of the match holds for a benchmark's `facts` (Policy.rule_for)."""
        for key, pattern in self.match.items():
            value = facts[key]
            if key == "shape":
                if any(value.get(dim) != wanted for dim, wanted in pattern.items()):
                    return False
            elif key == "interleaved":
                if pattern != value:
                    return False
            elif key == "under_ms":
                if value is None or not value < pattern:
                    return False
            elif not fnmatch.fnmatchcase(value, pattern):
                return False
        return True


@dataclass(frozen=True)
class Policy:
    defaults: Rule
    interleaved: dict[str, Any]
    overrides: tuple[Override, ...]
    source: str
    note: str | None = None  # said in every report it judges: perfbot's defaults stood in for the project's own

    def rule_for(
        self,
        kernel: str,
        suite: str,
        dtype: str,
        gpu: str,
        shape: dict[str, int],
        interleaved: bool = False,
        median_ms: float | None = None,
    ) -> Rule:
        """The rule of one benchmark; `median_ms`, the baseline's median time, for `under_ms`."""
        rule = replace(self.defaults, **self.interleaved) if interleaved else self.defaults
        facts: dict[str, Any] = {"kernel": kernel, "suite": suite, "dtype": dtype, "gpu": gpu, "shape": shape}
        facts.update(interleaved=interleaved, under_ms=median_ms)
        for override in self.overrides:
            if override.applies(facts):
                rule = replace(rule, **override.changes)
        return rule


def changes(used: Policy, other: Policy) -> list[str]:
    """What `other` sets differently from `used`, one "field: used → other" line per difference."""
    before, after = _flat(used), _flat(other)
    return [
        f"{key}: {before.get(key, '(unset)')} → {after.get(key, '(unset)')}"
        for key in sorted(before.keys() | after.keys())
        if before.get(key) != after.get(key)
    ]


def _flat(policy: Policy) -> dict[str, str]:
    flat = {f"defaults.{k}": f"{v:g}" for k, v in vars(policy.defaults).items()}
    flat.update({f"interleaved.{k}": f"{v:g}" for k, v in policy.interleaved.items()})
    for index, override in enumerate(policy.overrides):
        flat[f"overrides[{index}].match"] = str(override.match)
        flat.update({f"overrides[{index}].{k}": f"{v:g}" for k, v in override.changes.items()})
    return flat


def default_policy() -> Policy:
    """perfbot's default policy, for a project that has no thresholds.yaml; its note says so."""
    return replace(load_policy(DEFAULT_PATH), note=DEFAULT_NOTE)


def load_policy(path: Path) -> Policy:
    """thresholds.yaml, validated whole (schema.py): keys, types and ranges, and for every rule
    an override can produce, warn_percent at most fail_percent."""
    where = str(path)
    data = validate(where, load_yaml(path, "thresholds file"), _FILE, "thresholds file")
    defaults = data["defaults"]
    rule = Rule(
        float(defaults["fail_percent"]),
        float(defaults["warn_percent"]),
        float(defaults["alpha"]),
        int(defaults["min_samples"]),
    )
    _check_rule(where, "defaults", rule)
    interleaved = _numbers(data.get("interleaved", {}))
    _check_rule(where, "interleaved", replace(rule, **interleaved))
    overrides = []
    for index, entry in enumerate(data.get("overrides", [])):
        changes = _numbers({k: v for k, v in entry.items() if k != "match"})
        if not changes:
            raise BadInput(
                f"{where}: overrides[{index}] changes nothing; give one of {sorted(_RuleFields.__annotations__)}"
            )
        _check_rule(where, f"overrides[{index}]", replace(rule, **changes))
        _check_rule(where, f"overrides[{index}] (interleaved)", replace(rule, **{**interleaved, **changes}))
        overrides.append(Override(match=dict(entry["match"]), changes=changes))
    return Policy(defaults=rule, interleaved=interleaved, overrides=tuple(overrides), source=where)


def _numbers(fields: Any) -> dict[str, Any]:
    return {k: float(v) if k != "min_samples" else v for k, v in fields.items()}


def _check_rule(where: str, key: str, rule: Rule) -> None:
    if not rule.warn_percent <= rule.fail_percent:
        raise BadInput(
            f"{where}: {key}.warn_percent must be between 0 and fail_percent ({rule.fail_percent:g}), "
            f"got {rule.warn_percent:g}"
        )
