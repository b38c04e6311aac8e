"""thresholds.yaml: the regression policy, loaded into a validated object."""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from .errors import BadInput
from .files import read_text

VERSION = 1
_TOP_KEYS = {"version", "defaults", "interleaved", "overrides"}
_RULE_KEYS = {"fail_percent", "warn_percent", "alpha", "min_samples"}
_MATCH_KEYS = {"kernel", "suite", "dtype", "gpu", "shape"}


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

    def applies(self, kernel: str, suite: str, dtype: str, gpu: str, shape: dict[str, int]) -> bool:
        for key, pattern in self.match.items():
            if key == "shape":
                if any(shape.get(dim) != value for dim, value in pattern.items()):
                    return False
            elif not fnmatch.fnmatchcase({"kernel": kernel, "suite": suite, "dtype": dtype, "gpu": gpu}[key], pattern):
                return False
        return True


@dataclass(frozen=True)
class Policy:
    defaults: Rule
    interleaved: dict[str, Any]
    overrides: tuple[Override, ...]
    source: str

    def rule_for(
        self, kernel: str, suite: str, dtype: str, gpu: str, shape: dict[str, int], interleaved: bool = False
    ) -> Rule:
        rule = replace(self.defaults, **self.interleaved) if interleaved else self.defaults
        for override in self.overrides:
            if override.applies(kernel, suite, dtype, gpu, shape):
                rule = replace(rule, **override.changes)
        return rule


def changes(used: Policy, other: Policy) -> list[str]:
    """What `other` sets differently from `used`, one "field: used → other" line per difference."""
    before, after = _flat(used), _flat(other)
    return [f"{key}: {before.get(key, '(unset)')} → {after.get(key, '(unset)')}"
            for key in sorted(before.keys() | after.keys()) if before.get(key) != after.get(key)]


def _flat(policy: Policy) -> dict[str, str]:
    flat = {f"defaults.{k}": f"{v:g}" for k, v in vars(policy.defaults).items()}
    flat.update({f"interleaved.{k}": f"{v:g}" for k, v in policy.interleaved.items()})
    for index, override in enumerate(policy.overrides):
        flat[f"overrides[{index}].match"] = str(override.match)
        flat.update({f"overrides[{index}].{k}": f"{v:g}" for k, v in override.changes.items()})
    return flat


def load_policy(path: Path) -> Policy:
    where = str(path)
    text = read_text(path, "thresholds file")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise BadInput(f"{where}: cannot read it as YAML: {error}") from None
    if not isinstance(data, dict):
        raise BadInput(f"{where}: expected a mapping with keys {sorted(_TOP_KEYS)}")
    _reject_unknown(where, "", data, _TOP_KEYS)
    if data.get("version") != VERSION:
        raise BadInput(f"{where}: version must be {VERSION}, got {data.get('version')!r}")
    defaults = _rule_fields(where, "defaults", data.get("defaults"), required=True)
    rule = Rule(**defaults)
    interleaved = _rule_fields(where, "interleaved", data.get("interleaved", {}), required=False)
    _check_rule(where, "interleaved", replace(rule, **interleaved))
    overrides = []
    entries = data.get("overrides", [])
    if not isinstance(entries, list):
        raise BadInput(f"{where}: overrides must be a list")
    for index, entry in enumerate(entries):
        key = f"overrides[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("match"), dict) or not entry["match"]:
            raise BadInput(f"{where}: {key} needs a non-empty match: mapping (keys {sorted(_MATCH_KEYS)})")
        match = entry["match"]
        _reject_unknown(where, f"{key}.match.", match, _MATCH_KEYS)
        for name, value in match.items():
            if name == "shape":
                if not isinstance(value, dict) or not all(isinstance(v, int) for v in value.values()):
                    raise BadInput(f"{where}: {key}.match.shape must map dimensions to integers, got {value!r}")
            elif not isinstance(value, str):
                raise BadInput(f"{where}: {key}.match.{name} must be a string pattern, got {value!r}")
        changes = _rule_fields(where, key, {k: v for k, v in entry.items() if k != "match"}, required=False)
        if not changes:
            raise BadInput(f"{where}: {key} changes nothing; give one of {sorted(_RULE_KEYS)}")
        _check_rule(where, key, replace(rule, **changes))
        overrides.append(Override(match=match, changes=changes))
    return Policy(defaults=rule, interleaved=interleaved, overrides=tuple(overrides), source=where)


def _rule_fields(where: str, key: str, mapping: Any, required: bool) -> dict[str, Any]:
    if not isinstance(mapping, dict):
        raise BadInput(f"{where}: {key} must be a mapping with keys {sorted(_RULE_KEYS)}")
    _reject_unknown(where, f"{key}.", mapping, _RULE_KEYS)
    if required:
        missing = sorted(_RULE_KEYS - set(mapping))
        if missing:
            raise BadInput(f"{where}: {key}.{missing[0]} is missing")
    fields: dict[str, Any] = {}
    for name, value in mapping.items():
        if name == "min_samples":
            if not isinstance(value, int) or isinstance(value, bool):
                raise BadInput(f"{where}: {key}.min_samples must be an integer, got {value!r}")
        elif not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise BadInput(f"{where}: {key}.{name} must be a number, got {value!r}")
        fields[name] = float(value) if name != "min_samples" else value
    if required:
        _check_rule(where, key, Rule(**fields))
    return fields


def _check_rule(where: str, key: str, rule: Rule) -> None:
    if not 0 < rule.fail_percent < 100:
        raise BadInput(f"{where}: {key}.fail_percent must be between 0 and 100 (percent), got {rule.fail_percent}")
    if not 0 <= rule.warn_percent <= rule.fail_percent:
        raise BadInput(
            f"{where}: {key}.warn_percent must be between 0 and fail_percent ({rule.fail_percent}), got {rule.warn_percent}"
        )
    if not 0 < rule.alpha < 1:
        raise BadInput(f"{where}: {key}.alpha must be between 0 and 1, got {rule.alpha}")
    if rule.min_samples < 3:
        raise BadInput(f"{where}: {key}.min_samples must be at least 3, got {rule.min_samples}")


def _reject_unknown(where: str, prefix: str, mapping: dict, allowed: set[str]) -> None:
    unknown = sorted(set(mapping) - allowed, key=str)
    if unknown:
        raise BadInput(f"{where}: unknown key {prefix}{unknown[0]}; allowed: {', '.join(sorted(allowed))}")
