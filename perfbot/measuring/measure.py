"""The timing engine: CUDA-graph replays, L2 flushed before each sample, implementations
interleaved, the GPU's throttle state read after every round. It returns every sample and
decides nothing (decisions live in compare)."""

from __future__ import annotations

import functools
import random
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from ..compiling import launches

# Bytes read between samples to evict the previous sample's data from L2; at least this,
# and at least four times the L2 of the GPU at hand.
MIN_FLUSH_BYTES = 256 * 1024 * 1024
# GPU clock cycles to hold per sample of a round while the host queues it: several times what
# queueing one sample takes the host (docs/method.md, "Timing").
HOLD_CYCLES_PER_SAMPLE = 200_000
# How samples are taken, recorded with every result: `perfbot compare` notes when a baseline was
# timed another way (an older perfbot flushed L2 by overwriting the buffer).
L2_FLUSH = "L2 flushed before each sample by reading a buffer 4x its size"


@dataclass(frozen=True)
class Round:
    """The GPU's state right after one round: NVML's throttle reasons and SM clock."""

    throttle_reasons: tuple[str, ...] = ()
    sm_clock_mhz: int | None = None


@dataclass(frozen=True)
class Timings:
    samples: dict[str, list[float]]  # name -> ms, one per round
    rounds: list[Round]


class Monitor(Protocol):
    def read(self) -> Round: ...


# Rounds in which round_order balances the pairs it times side by side (each side first twice,
# after each neighbour once, each name in four places).
BALANCED_ROUNDS = 4
# Rounds per block of a sequential A/B: each block is timed on fresh captures, and the paired
# verdict counts blocks (the median per-round ratio of each) as its independent units. A whole
# number of balanced rounds, so that every block is balanced on its own.
BLOCK_ROUNDS = BALANCED_ROUNDS
# A re-captured benchmark's buffers start up to this far into its graph's memory (256-byte steps).
MAX_OFFSET_BYTES = 2 * 1024 * 1024


def random_offset(rng: random.Random) -> int:
    """Where a re-capture puts its buffers (`capture`'s offset_bytes)."""
    return rng.randrange(MAX_OFFSET_BYTES // 256) * 256


@dataclass(frozen=True)
class Staged:
    """A call timed after a stage that is not: `before` (a backward's forward, which makes the
    tensors autograd saves) runs first, on the capture stream, outside the timed graph; `call` is
    what is captured and timed. Called whole, it runs both (measuring/modes.py)."""

    before: Callable[[], Any]
    call: Callable[[], Any]

    def __call__(self) -> Any:
        self.before()
        return self.call()


@dataclass(frozen=True)
class Captured:
    """An implementation captured as a CUDA graph; `output` is what each replay writes (a tensor,
    or a tuple of them: a backward's gradients)."""

    graph: torch.cuda.CUDAGraph
    output: Any
    # The Triton launches seen while it was captured; not part of its identity (GraphTimer keeps
    # the captures it uploaded in a WeakSet).
    launched: launches.Launched | None = field(default=None, compare=False)
    # Of a Staged call: its `before` captured as a graph of its own, never timed; replayed before
    # `graph` where what the timed graph reads must be made again (`replay`: fresh inputs).
    before: torch.cuda.CUDAGraph | None = field(default=None, compare=False)


def capture(fn: Callable[[], Any], warmup_calls: int, offset_bytes: int = 0) -> Captured:
    """Run `fn` a few times outside the graph (compilation, autotuning, lazy init), then capture
    one call. Capture on a side stream, as torch.cuda.graphs requires. `offset_bytes` are
    allocated in the graph's memory first, so that what `fn` allocates in the same size class of
    the caching allocator (up to 1 MiB, or above) lands further on: where a buffer lies can move
    a short kernel's time by a percent, and a sequential A/B captures again before every block,
    into new graph memory and at a random offset, so that no one placement decides
    (runner.LocalSides.recapture).

    Of a `Staged` call, `before` is captured first, in a graph of its own that is replayed once
    (and again by `replay`, never by a timer), then `call`, both on the stream the warmup calls
    ran on: autograd runs a backward on the streams its forward ran on, which must be the
    capture's."""
    staged = fn if isinstance(fn, Staged) else None
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmup_calls):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    before = None
    if staged is not None:
        before = torch.cuda.CUDAGraph()
        with torch.cuda.graph(before, stream=stream):
            staged.before()
        before.replay()
        torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    timed = staged.call if staged is not None else fn
    with torch.cuda.graph(graph, stream=stream if staged else None), launches.recording(capturing=True) as seen:
        spacer = torch.empty(offset_bytes, dtype=torch.uint8, device="cuda") if offset_bytes else None
        output = timed()
    del spacer
    return Captured(graph, output, seen, before)


def replay(captured: Captured) -> Any:
    """One replay of the graph, synchronized, after its `before` graph where it has one (so that
    inputs written since are read): the output it wrote."""
    if captured.before is not None:
        captured.before.replay()
    captured.graph.replay()
    torch.cuda.synchronize()
    return captured.output


def graph_problem(captured: Captured, launched_when_called: int) -> str | None:
    """What is wrong with a capture of an implementation whose call launched
    `launched_when_called` Triton kernels: a graph that holds none of them replays nothing of it
    (a result kept across calls), and a launch on a stream outside the capture runs once, at
    capture, and never again in a timed replay. None if neither, or where launches were not seen."""
    seen = captured.launched
    if seen is None or seen.unrecorded is not None or not launched_when_called:
        return None
    if not seen.count:
        return (
            f"its CUDA graph holds none of the {launched_when_called} Triton kernel launch(es) its call made: "
            "a replay would time nothing of it (a result kept across calls?)"
        )
    if seen.outside:
        return f"it launched {seen.outside} Triton kernel(s) on a stream outside the CUDA graph's capture"
    return None


def capture_again(
    captured: dict[str, Captured],
    calls: Mapping[str, Callable[[], Any]],
    keys: Sequence[str],
    rng: random.Random,
) -> None:
    """Capture these benchmarks again, each at a random offset in its graph's memory (a
    sequential A/B's next block: `capture` says why), in a random order: the benchmark captured
    later gets the memory the earlier ones' old graphs just gave back, and in a fixed order that
    would always be the same side of a pair."""
    for key in rng.sample(list(keys), len(keys)):
        captured[key] = capture(calls[key], 1, random_offset(rng))


class Timer(Protocol):
    """Times one sample of a benchmark, by key, inside a round. `sample` may only queue the work:
    its result is read after `end_round`."""

    def begin_round(self, order: Sequence[str]) -> None: ...

    def sample(self, key: str) -> Callable[[], float]: ...

    def end_round(self, order: Sequence[str]) -> None: ...


def time_rounds(
    timer: Timer,
    keys: Sequence[str],
    samples: int,
    on_round: Callable[[], None] | None = None,
    monitor: Monitor | None = None,
    start: int = 0,
    pairs: Sequence[tuple[str, str]] = (),
    side_by_side: Sequence[tuple[str, str]] = (),
    seed: int | str = 0,
) -> Timings:
    """The interleaving loop, the only one: `samples` rounds, each timing every key once in the
    order `round_order` gives (the two sides of each of `pairs` in places drawn from `seed` for
    every block of BALANCED_ROUNDS rounds, those of `side_by_side` next to each other), the GPU's
    state read after every round. Milliseconds per key. `start` numbers the first round (a
    sequential A/B calls this again for more rounds)."""
    timings: dict[str, list[float]] = {key: [] for key in keys}
    rounds: list[Round] = []
    for round_index in range(start, start + samples):
        order = round_order(keys, round_index, pairs, side_by_side, seed)
        timer.begin_round(order)
        pending = [(key, timer.sample(key)) for key in order]
        timer.end_round(order)
        for key, read in pending:
            timings[key].append(read())
        rounds.append(monitor.read() if monitor is not None else Round())
        if on_round is not None:
            on_round()
    return Timings(timings, rounds)


class GraphTimer:
    """Implementations captured in this process, timed on its GPU.

    A round is queued on the GPU in one go. Before each sample L2 is flushed (`L2Flush`), so every
    sample starts with a cold cache, as a layer in a model does. While the GPU flushes, the host
    has already queued the start event and the replay: the events bracket the kernel, not the
    launch. Untimed replays come before the first timed sample of a round and after the last, so
    that every timed sample sits between two others: without them the first and last samples of
    a round were biased (docs/method.md, "Timing"). The GPU also holds (a spin kernel) while the
    host queues the round.
    """

    def __init__(self, captured: Mapping[str, Captured]):
        self.captured = captured  # may change between rounds (a sequential A/B re-captures)
        self.flush = L2Flush()
        self.uploaded: weakref.WeakSet[Captured] = weakref.WeakSet()
        self._upload(list(captured))
        torch.cuda.synchronize()

    def _upload(self, keys: Sequence[str]) -> None:
        """The first replay of a graph uploads it: keep that out of the timed samples."""
        for key in keys:
            item = self.captured[key]
            if item not in self.uploaded:
                item.graph.replay()
                self.uploaded.add(item)

    def begin_round(self, order: Sequence[str]) -> None:
        self._upload(order)
        torch.cuda._sleep(HOLD_CYCLES_PER_SAMPLE * len(order))
        self.flush()  # lead-in, untimed
        self.captured[order[-1]].graph.replay()

    def sample(self, key: str) -> Callable[[], float]:
        start, end = _replay_between_events(self.captured[key], self.flush)
        return lambda: start.elapsed_time(end)

    def end_round(self, order: Sequence[str]) -> None:
        self.flush()  # trailer, untimed
        self.captured[order[0]].graph.replay()
        torch.cuda.synchronize()


def time_interleaved(
    captured: Mapping[str, Captured],
    samples: int,
    on_round: Callable[[], None] | None = None,
    monitor: Monitor | None = None,
) -> Timings:
    """Every captured implementation timed interleaved on this GPU (`GraphTimer`, `time_rounds`)."""
    return time_rounds(GraphTimer(captured), list(captured), samples, on_round, monitor)


def round_order(
    names: Sequence[str],
    round_index: int,
    pairs: Sequence[tuple[str, str]] = (),
    side_by_side: Sequence[tuple[str, str]] = (),
    seed: int | str = 0,
) -> list[str]:
    """The order of one round: rotated, and reversed in every odd round, so that every pair of
    names runs in both orders equally often (a rotation alone would put one name right after
    another in all rounds but one, and what a sample leaves behind, clock or power state, would
    bias that pair).

    `pairs` are the two sides (base, head) of one benchmark of an A/B. Which side takes which of
    the pair's two places is drawn per pair and block (`side_places`, from `seed`), so that over
    the blocks each side follows and precedes either side of its neighbours equally often: a
    neighbour that changed on one side then moves both sides of a benchmark alike
    (docs/method.md, "Exchangeable sides").

    The two names of each of `side_by_side` (base and head of one long benchmark) move as one
    unit, next to each other, so that their samples are taken milliseconds apart rather than half
    a round apart (docs/method.md, "Side by side"). With pairs the rotation moves every
    BALANCED_ROUNDS rounds, so that each name takes that many places and both sides of a pair
    the same ones. The other names keep their listed places, half on each side of the paired
    units; that needs two paired units (one in the middle, one at the wrap), and with fewer every
    name is spread.

    A long A/B asks for thousands of rounds in a few layouts: what depends only on the names and
    pairs, and the order for each draw of places and rotation, are worked out once (`_layout`,
    `_order`)."""
    names, pairs, side_by_side = tuple(names), tuple(pairs), tuple(side_by_side)
    present, long = _layout(names, pairs, side_by_side)
    flips = tuple(side_places(len(present), round_index, seed))
    shift = (round_index // (BALANCED_ROUNDS if present else 2)) % (len(names) - len(long))
    order = _order(names, present, long, flips, shift)
    return list(order[::-1] if round_index % 2 else order)


@functools.lru_cache(maxsize=1024)
def _layout(
    names: tuple[str, ...], pairs: tuple[tuple[str, str], ...], side_by_side: tuple[tuple[str, str], ...]
) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """round_order's pairs present among `names`, balanced ones first, and those of them that
    move as one unit, side by side (none unless two do, or they are half the names)."""
    balanced = [*pairs, *(pair for pair in side_by_side if pair not in pairs)]
    present = tuple(pair for pair in balanced if pair[0] in names and pair[1] in names)
    paired = [name for pair in present for name in pair]
    if len(set(paired)) != len(paired) or any(a == b for a, b in present):
        raise ValueError(f"a name in two pairs, or paired with itself: {list(present)}")
    long = tuple(pair for pair in present if pair in side_by_side)
    return present, (long if len(long) >= 2 or 2 * len(long) >= len(names) else ())


@functools.lru_cache(maxsize=4096)
def _order(
    names: tuple[str, ...],
    present: tuple[tuple[str, str], ...],
    long_pairs: tuple[tuple[str, str], ...],
    flips: tuple[int, ...],
    shift: int,
) -> tuple[str, ...]:
    """round_order's order, run forwards, for one draw of places (`flips`) and rotation (`shift`)."""
    placed = {pair: (pair[flip], pair[1 - flip]) for pair, flip in zip(present, flips, strict=True)}
    long = [placed[pair] for pair in long_pairs]
    in_long = {name for unit in long for name in unit}
    # A spread pair keeps the two places it is listed in; the side drawn to go first takes the first.
    takes: dict[str, str] = {}
    for pair, (first, second) in placed.items():
        if pair[0] not in in_long:
            takes[pair[0]], takes[pair[1]] = first, second
    alone = [(takes.get(name, name),) for name in names if name not in in_long]
    half, middle = len(alone) // 2, len(long) // 2
    units = [*alone[:half], *long[:middle], *alone[half:], *long[middle:]]
    return tuple(name for unit in (*units[shift:], *units[:shift]) for name in unit)


def side_places(count: int, round_index: int, seed: int | str = 0) -> list[int]:
    """For each of `count` pairs, which of its two sides takes its first place this round (0: the
    one listed first). Drawn for every pair and every block of BALANCED_ROUNDS rounds from `seed`,
    then balanced within the block: rounds 0 and 2 of a block (run forwards) place the pair both
    ways, and so do rounds 1 and 3 (run backwards), so that within a block each side comes first
    twice, once from each end of the round."""
    block, step = divmod(round_index, BALANCED_ROUNDS)
    flips = []
    for forwards, backwards in _block_draws(count, block, seed):
        flip = backwards if step % 2 else forwards
        flips.append(1 - flip if step >= 2 else flip)
    return flips


@functools.lru_cache(maxsize=256)
def _block_draws(count: int, block: int, seed: int | str) -> tuple[tuple[int, int], ...]:
    """The draws of `side_places` for one block: the same for each of its rounds, drawn once."""
    draws = random.Random(f"{seed}/{block}")
    return tuple((draws.getrandbits(1), draws.getrandbits(1)) for _ in range(count))


def time_once(captured: Captured, flush: L2Flush) -> float:
    """Milliseconds of one graph replay after an L2 flush, synchronized: for a worker process
    that times one sample when told to, so that two processes alternate on the GPU."""
    start, end = _replay_between_events(captured, flush)
    end.synchronize()
    return start.elapsed_time(end)


def _replay_between_events(captured: Captured, flush: L2Flush) -> tuple[torch.cuda.Event, torch.cuda.Event]:
    """Queue an L2 flush, then one graph replay bracketed by timing events."""
    flush()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    captured.graph.replay()
    end.record()
    return start, end


class L2Flush:
    """Evicts L2 before a sample by reading a buffer four times its size (at least 256 MiB).

    Reading, not writing: an overwritten buffer leaves L2 full of dirty lines that the next timed
    kernel pays to write back (docs/method.md, "Timing").
    """

    def __init__(self) -> None:
        self.buffer = torch.empty(_flush_bytes() // 8, dtype=torch.int64, device="cuda")

    def __call__(self) -> None:
        torch.sum(self.buffer)


def _flush_bytes() -> int:
    l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)
    return max(MIN_FLUSH_BYTES, 4 * l2)
