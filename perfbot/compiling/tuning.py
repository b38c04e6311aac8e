"""The autotuner's part in a call: for each `triton.autotune`d kernel the call launches, which
config it ran for which key and how that config was chosen (records/autotune.py); and the means
to choose it instead of the autotuner, one config after another (`perfbot check`) or a given one
(`pin`: both sides of an A/B at one config, a confirming round at the first round's).

Triton's `Autotuner.run` keys its in-process cache `cache` on the values of the arguments its
`key` names and the dtypes of the tensor arguments; on a miss it prunes its configs
(`early_config_prune`, then `perf_model` and `top_k`), times each with its `do_bench`, keeps the
fastest and runs it. For the length of a call made under `session` that method is wrapped:

- it notes the pick after the run: "tuned" (with each candidate's time) where this call tuned,
  "disk cache" where Triton's on-disk cache answered, "only config" for a kernel of one config;
  a later call that finds the pick in the cache notes how it was first made;
- a pinned (kernel, key) finds its config in the cache before the run, so nothing is tuned;
- a forced round prunes as Triton does, then leaves only the round's config, and times it with
  a `do_bench` that runs it once and times nothing: the hooks (`pre_hook`, `post_hook`,
  `reset_to_zero`, `restore_value`, the config's own `pre_hook`) run as they do when a GPU tunes,
  around a tuning run and before the final one.

A Triton whose Autotuner lacks these names is run as it is, and nothing is noted.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import re
import textwrap
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..records.autotune import MAX_CANDIDATES, AutotunePick, Candidate
from ..records.schema import MAX_TEXT, clean

Identity = tuple[str, str | None, str, tuple[str, ...]]  # AutotunePick.identity()
_LOCK = threading.RLock()  # one session at a time: the wrapped method is the class's
_ACTIVE: list[Session] = []
# How each (autotuner, key) pick was first made, for the calls that later find it in the cache.
_FIRST: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], AutotunePick]] = weakref.WeakKeyDictionary()


@dataclass
class Session:
    """What the calls made under one `session` noted, and what it imposes: `pins` (identity ->
    config) or a `forced` round index."""

    pins: Mapping[Identity, dict[str, Any]] = field(default_factory=dict)
    pinned_to: str = "the base's pick"
    forced: int | None = None
    picks: dict[Identity, AutotunePick] = field(default_factory=dict)
    # Forced rounds: how many candidates survived pruning, per (kernel, key) seen.
    candidates: dict[Identity, int] = field(default_factory=dict)
    # Every config each kernel seen may run (before pruning), as config_record gives them.
    configs: dict[Identity, list[dict[str, Any]]] = field(default_factory=dict)

    def note(self, pick: AutotunePick) -> None:
        self.picks.setdefault(pick.identity(), pick)


@contextmanager
def session(
    pins: Mapping[Identity, dict[str, Any]] | None = None, forced: int | None = None, pinned_to: str = "the base's pick"
) -> Iterator[Session]:
    """Note (and with `pins` or `forced`, choose) every autotuned kernel's config inside the block.
    Inside another session, one that imposes nothing imposes the outer one's choices, and what
    it notes the outer one notes too."""
    outer = _ACTIVE[-1] if _ACTIVE else None
    if outer is not None and pins is None and forced is None:
        noted = Session(pins=outer.pins, forced=outer.forced, pinned_to=outer.pinned_to)
    else:
        noted = Session(pins=dict(pins or {}), forced=forced, pinned_to=pinned_to)
    autotuner = _autotuner_class()
    if autotuner is None:
        yield noted
        return
    with _LOCK:
        original = autotuner.run
        nested = getattr(original, "_perfbot_wrapped", False)
        if not nested:
            wrapped = functools.partialmethod(_run, original)
            wrapped._perfbot_wrapped = True  # type: ignore[attr-defined]
            autotuner.run = wrapped
        _ACTIVE.append(noted)
        try:
            yield noted
        finally:
            _ACTIVE.pop()
            if not nested:
                autotuner.run = original
            if outer is not None:
                for pick in noted.picks.values():
                    outer.note(pick)
                for identity, count in noted.candidates.items():
                    outer.candidates[identity] = max(outer.candidates.get(identity, 0), count)
                for identity, configs in noted.configs.items():
                    outer.configs.setdefault(identity, configs)


def under(call: Callable[[], Any], pins: Mapping[Identity, dict[str, Any]], pinned_to: str) -> Callable[[], Any]:
    """`call`, each time it is called, with the pinned kernels at their configs."""

    def pinned() -> Any:
        with session(pins, pinned_to=pinned_to):
            return call()

    return pinned


def _autotuner_class() -> Any:
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return None
    return Autotuner if callable(getattr(Autotuner, "run", None)) and hasattr(Autotuner, "prune_configs") else None


def _run(tuner: Any, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    noted = _ACTIVE[-1] if _ACTIVE else None
    if noted is None or not all(hasattr(tuner, n) for n in ("configs", "keys", "arg_names", "cache")):
        return original(tuner, *args, **kwargs)
    key = _key(tuner, args, kwargs)
    kernel, source, configs = _name(tuner), _source_sha256(tuner), configs_sha256(tuner.configs)
    identity: Identity = (kernel, source, configs, tuple(_text(v) for v in key))
    noted.configs.setdefault(identity, [config_record(c) for c in tuner.configs])

    def pick(config: Any, origin: str, **more: Any) -> AutotunePick:
        return AutotunePick(
            kernel=kernel,
            source_sha256=source,
            configs_sha256=configs,
            key=list(identity[3]),
            config=config_record(config),
            origin=origin,  # type: ignore[arg-type]
            **more,
        )

    if len(tuner.configs) <= 1:
        result = original(tuner, *args, **kwargs)
        noted.note(pick(tuner.configs[0], "only config"))
        return result
    if identity in noted.pins:
        wanted = noted.pins[identity]
        config = next((c for c in tuner.configs if config_record(c) == wanted), None)
        if config is not None:
            first = _FIRST.get(tuner, {}).get(key)
            own = first.config if first is not None and first.origin != "pinned" else None
            tuner.cache[key] = config
            result = original(tuner, *args, **kwargs)
            noted.note(pick(config, "pinned", tuned=own, pinned_to=noted.pinned_to))
            return result
    if noted.forced is not None:
        return _forced(tuner, original, key, identity, noted, pick, args, kwargs)
    cached = key in tuner.cache
    disk: list[bool] = []
    if not cached and hasattr(tuner, "check_disk_cache"):
        check = tuner.check_disk_cache

        def checking(*a: Any, **k: Any) -> bool:
            disk.append(bool(check(*a, **k)))
            return disk[-1]

        tuner.check_disk_cache = checking
    try:
        result = original(tuner, *args, **kwargs)
    finally:
        tuner.__dict__.pop("check_disk_cache", None)
    config = tuner.cache.get(key, getattr(tuner, "best_config", None))
    first = _FIRST.get(tuner, {}).get(key)
    if cached and first is not None and config_record(config) == first.config:
        noted.note(first)  # how it was first chosen, by an earlier call
        return result
    timings = _candidates(getattr(tuner, "configs_timings", {})) if not cached else []
    made = pick(config, "disk cache" if disk and disk[-1] else "tuned", candidates=timings)
    _FIRST.setdefault(tuner, {})[key] = made
    noted.note(made)
    return result


def _forced(
    tuner: Any,
    original: Callable[..., Any],
    key: tuple[Any, ...],
    identity: Identity,
    noted: Session,
    pick: Callable[..., AutotunePick],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """Run round `noted.forced`'s config of those pruning leaves, as a GPU's tuning would run it
    had it been the fastest: once in the tuning loop (hooks around it), then for the result."""
    chose: list[Any] = []
    prune_all = type(tuner).prune_configs

    def prune(kw: dict[str, Any]) -> list[Any]:
        pruned = list(prune_all(tuner, kw))
        noted.candidates[identity] = max(noted.candidates.get(identity, 0), len(pruned))
        chose.append(pruned[noted.forced % len(pruned)])  # type: ignore[operator]
        return [chose[-1]]

    saved = tuner.__dict__.get("do_bench", _MISSING)
    tuner.cache.pop(key, None)
    tuner.prune_configs = prune
    tuner.__dict__["do_bench"] = _once
    try:
        result = original(tuner, *args, **kwargs)
    finally:
        tuner.__dict__.pop("prune_configs", None)
        if saved is _MISSING:
            tuner.__dict__.pop("do_bench", None)
        else:
            tuner.__dict__["do_bench"] = saved
        tuner.cache.pop(key, None)  # the next round, and any later call, chooses afresh
    noted.note(pick(chose[-1] if chose else tuner.best_config, "forced"))
    return result


_MISSING = object()


def _once(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> list[float]:
    """A `do_bench` that runs the config once and times nothing."""
    kernel_call()
    return [0.0, 0.0, 0.0]


def _key(tuner: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The key Triton's Autotuner.run files the call's pick under: the values of the arguments its
    `key` names, then the dtype of every tensor argument."""
    named = {**dict(zip(tuner.arg_names, args, strict=False)), **kwargs}
    named = {k: v for k, v in named.items() if k in tuner.arg_names}
    key: list[Any] = [named[k] for k in tuner.keys if k in named]
    key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return tuple(key)


def _text(value: Any) -> str:
    return clean(str(value), MAX_TEXT)


def _name(tuner: Any) -> str:
    fn = getattr(tuner, "base_fn", None)
    return clean(str(getattr(fn, "__name__", type(tuner).__name__)), 200)


def _source_sha256(tuner: Any) -> str | None:
    """Of the kernel's source as Triton's JITFunction holds it (from its `def`), as compiled
    records take it; read from the function where the interpreter holds none."""
    fn = getattr(tuner, "fn", None)
    while fn is not None:
        src = getattr(fn, "src", None)
        if isinstance(src, str):
            return hashlib.sha256(src.encode()).hexdigest()
        fn = getattr(fn, "fn", None)
    try:
        text = textwrap.dedent(inspect.getsource(tuner.base_fn))
    except (OSError, TypeError, AttributeError):
        return None
    found = re.search(r"^def\s+\w+\s*\(", text, re.MULTILINE)
    return hashlib.sha256(text[found.start() if found else 0 :].encode()).hexdigest()


def config_record(config: Any) -> dict[str, Any]:
    """A triton.Config as records hold it: its keyword arguments, then its launch options; a
    value JSON cannot hold exactly as text."""
    kwargs = dict(getattr(config, "kwargs", {}) or {})
    options = {name: getattr(config, name, None) for name in ("num_warps", "num_stages", "num_ctas", "maxnreg")}
    return {str(k): _plain(v) for k, v in {**kwargs, **options}.items()}


def _plain(value: Any) -> Any:
    return value if isinstance(value, bool | int | str) or value is None else _text(value)


def configs_sha256(configs: Any) -> str:
    """Of the candidates, in order, each with its keyword arguments, launch options and the name
    of its pre_hook."""
    listed = [
        {**config_record(c), "pre_hook": getattr(getattr(c, "pre_hook", None), "__qualname__", None)} for c in configs
    ]
    return hashlib.sha256(json.dumps(listed, sort_keys=True).encode()).hexdigest()


def _candidates(timings: Any) -> list[Candidate]:
    """The candidates' times from Triton's configs_timings (config -> [median, p20, p80], or a
    float): the median, None where it failed (Triton gives it infinite time)."""
    found = []
    for config, timing in list(dict(timings or {}).items())[:MAX_CANDIDATES]:
        ms = timing[0] if isinstance(timing, list | tuple) and timing else timing
        usable = isinstance(ms, int | float) and not isinstance(ms, bool) and 0 <= ms < float("inf")
        found.append(Candidate(config=config_record(config), ms=float(ms) if usable else None))
    return found
