"""The parts of `perfbot run` that need no GPU: the plan, the correctness rule, the table,
the environment record."""

import dataclasses
import json
import math
import subprocess

import pytest
import torch

from perfbot.errors import BadInput
from perfbot.loading.package import load_subject
from perfbot.measuring import correctness, measure
from perfbot.measuring.environment import clock_event_reasons, collect_environment, triton_commit
from perfbot.measuring.measure import round_order
from perfbot.measuring.planning import RunSettings, chosen_variants, plan
from perfbot.output.run_tables import run_table
from perfbot.records.run import Benchmark, Environment, Results, Settings
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def subject():
    return load_subject(ROOT / "kernels")


def test_plan_groups_by_case_and_times_what_takes_no_variant_once(subject):
    settings = RunSettings(variants=chosen_variants(subject.subject, ["approximate=all"]))
    groups = plan(subject, [subject.suites["pr"]], settings)
    assert len(groups) == len(subject.suites["pr"].cases)
    kernels = [p.key for p in groups[0]]
    assert kernels == [
        "fused",
        "fused[approximate=tanh]",
        "eager",
        "eager[approximate=tanh]",
        "compiled",
        "compiled[approximate=tanh]",
        "gemm",
    ]
    assert groups[0][1].variant == {"approximate": "tanh"} and groups[0][0].variant == {}


def test_variant_options(subject):
    assert chosen_variants(subject.subject, ["approximate=tanh"]) == (("approximate", ("tanh",)),)
    assert chosen_variants(subject.subject, ["approximate=tanh", "approximate=none"]) == (
        ("approximate", ("tanh", "none")),
    )
    with pytest.raises(BadInput, match="subject 'geglu' has no variant 'colour' \\(it has approximate\\)"):
        chosen_variants(subject.subject, ["colour=red"])
    with pytest.raises(BadInput, match="approximate is one of none, tanh \\(or all\\)"):
        chosen_variants(subject.subject, ["approximate=sigmoid"])


def test_plan_honours_kernel_filter(subject):
    groups = plan(subject, [subject.suites["decode"]], RunSettings(kernels=("fused", "gemm")))
    assert {p.kernel for g in groups for p in g} == {"fused", "gemm"}


@pytest.mark.parametrize("count", [2, 3, 6])
def test_round_order_runs_every_pair_both_ways_equally_often(count):
    names = [f"k{i}" for i in range(count)]
    orders = [round_order(names, r) for r in range(2 * count)]
    assert all(sorted(order) == names for order in orders)
    for a in names:
        for b in names:
            if a != b:
                before = sum(order.index(a) < order.index(b) for order in orders)
                assert before == count, (a, b)
                # and right after one another, also both ways alike
                after = sum(order.index(b) == order.index(a) + 1 for order in orders)
                assert after == sum(order.index(a) == order.index(b) + 1 for order in orders)
    assert {order[0] for order in orders} == set(names)


def test_round_order_keeps_the_two_sides_of_each_ab_pair_side_by_side():
    names = ["base:a", "base:b", "base:c", "head:a", "head:b", "head:c", "head:new"]
    pairs = [("base:a", "head:a"), ("base:b", "head:b"), ("base:c", "head:c")]
    rounds = 4 * 4  # a full cycle: four units, the rotation moving on every four rounds
    orders = [round_order(names, r, pairs, pairs) for r in range(rounds)]
    assert all(sorted(order) == sorted(names) for order in orders)
    for base, head in pairs:
        assert all(abs(order.index(base) - order.index(head)) == 1 for order in orders)
        # in every block of four rounds each side goes first twice, once after each of the
        # pair's two neighbours (the round's lead-in replays its last sample before the first)
        for block in range(0, rounds, 4):
            seen = set()
            for order in orders[block : block + 4]:
                first = min(order.index(base), order.index(head))
                seen.add((order[first], order[first - 1]))
            assert len(seen) == 4 and {side for side, _ in seen} == {base, head}, seen
    leading = {tuple(sorted(order[:2])) for order in orders if order[0] != "head:new"}
    assert leading == {tuple(sorted(pair)) for pair in pairs}  # every pair leads a round
    assert any(order[0] == "head:new" for order in orders)
    for r in range(14):  # no pairs: the plain rotation, moving every two rounds, odd rounds reversed
        shift = (r // 2) % len(names)
        plain = [*names[shift:], *names[:shift]]
        assert round_order(names, r) == (plain[::-1] if r % 2 else plain)
    with pytest.raises(ValueError, match="two pairs"):
        round_order(names, 0, [("base:a", "head:a"), ("base:a", "head:b")])
    # one long pair among short ones: every name spread, as if none were side by side
    one = [("base:a", "head:a")]
    assert all(round_order(names, r, one, one) == round_order(names, r, one) for r in range(16))


def test_each_side_of_a_benchmark_meets_either_side_of_its_neighbours_alike():
    # A short case of an A/B, every base listed before every head: in fixed places each side of
    # fused-pointer would only ever sit beside its own side's fused (docs/method.md).
    kernels = ["fused", "fused-pointer", "eager", "gemm"]
    names = [f"{side}:{k}" for side in ("base", "head") for k in kernels]
    pairs = [(f"base:{k}", f"head:{k}") for k in kernels]
    met = {(side, other): 0 for side in ("base", "head") for other in ("base", "head")}
    for block in range(500):
        orders = [round_order(names, r, pairs, seed="case") for r in range(4 * block, 4 * block + 4)]
        flips = [measure.side_places(len(pairs), r, "case") for r in range(4 * block, 4 * block + 4)]
        for pair in range(len(pairs)):  # each side takes the first place twice, once each way round
            forwards, backwards = (flips[step][pair] for step in (0, 2)), (flips[step][pair] for step in (1, 3))
            assert sorted(forwards) == sorted(backwards) == [0, 1]
        for order in orders:
            for side in ("base", "head"):
                at = order.index(f"{side}:fused-pointer")
                for neighbour in (order[at - 1], order[(at + 1) % len(order)]):
                    if neighbour.endswith(":fused"):
                        met[side, neighbour.partition(":")[0]] += 1
    total = sum(met.values())
    assert all(abs(count / total - 0.25) < 0.02 for count in met.values()), met
    # The same seed draws the same places; another seed, other places.
    assert round_order(names, 9, pairs, seed=1) == round_order(names, 9, pairs, seed=1)
    assert any(round_order(names, r, pairs, seed=1) != round_order(names, r, pairs, seed=2) for r in range(16))
    # A plain run (no pairs) keeps the plain rotation whatever the seed.
    assert round_order(names, 3, seed=1) == round_order(names, 3, seed=2)


def test_in_every_block_the_two_sides_of_a_pair_take_the_same_places():
    # spread pairs only (a short case) and side by side ones: whichever side a block's draw puts
    # first, over the block each side of a pair stands in the same four places as the other
    names = [f"{side}:{k}" for side in ("base", "head") for k in ("a", "b", "c")] + ["head:new"]
    pairs = [(f"base:{k}", f"head:{k}") for k in ("a", "b", "c")]
    for together in ([], pairs):
        for block in range(0, 400, 4):
            orders = [round_order(names, r, pairs, together, seed="s") for r in range(block, block + 4)]
            for base, head in pairs:
                assert sorted(o.index(base) for o in orders) == sorted(o.index(head) for o in orders), orders


def test_every_block_of_a_sequential_ab_is_balanced_on_its_own():
    """The paired verdict counts blocks as independent units, so within each block every side of
    every pair must go first as often as second: the block is a whole number of the rounds in
    which round_order balances. A block of 5 (or a balance of 8) breaks it."""
    names = ["base:a", "base:b", "base:c", "head:a", "head:b", "head:c"]
    pairs = [("base:a", "head:a"), ("base:b", "head:b"), ("base:c", "head:c")]
    for together in ((), pairs[:1]):
        for start in range(0, 40 * measure.BLOCK_ROUNDS, measure.BLOCK_ROUNDS):
            orders = [
                round_order(names, r, pairs, together, seed="s") for r in range(start, start + measure.BLOCK_ROUNDS)
            ]
            for base, head in pairs:
                first = sum(order.index(base) < order.index(head) for order in orders)
                assert 2 * first == measure.BLOCK_ROUNDS, (start, base, orders)


def test_with_two_pairs_every_name_takes_four_places_in_every_block_of_four_rounds():
    # the selftest's round: the kernel against its twin, and a copy against the slowed one
    names, pairs = ["A", "A2", "A@0.5", "B0.5"], [("A", "A2"), ("A@0.5", "B0.5")]
    for block in range(0, 16, 4):
        orders = [round_order(names, r, pairs, pairs) for r in range(block, block + 4)]
        for name in names:
            assert sorted(order.index(name) for order in orders) == [0, 1, 2, 3], (name, orders)


def test_each_round_is_queued_behind_a_hold_between_untimed_replays(monkeypatch):
    # The GPU cannot run here: record the order in which operations reach its queue instead.
    queue = []

    class Event:
        def __init__(self, enable_timing):
            self.kind = None

        def record(self):
            self.kind = "end" if queue and queue[-1].startswith("replay") else "start"
            queue.append(self.kind)

        def elapsed_time(self, end):
            return 1.0

    class Flush:
        def __call__(self):
            queue.append("flush")

    class Graph:
        def __init__(self, name):
            self.name = name

        def replay(self):
            queue.append(f"replay:{self.name}")

    monkeypatch.setattr(measure, "L2Flush", Flush)
    monkeypatch.setattr(measure.torch.cuda, "Event", Event)
    monkeypatch.setattr(measure.torch.cuda, "synchronize", lambda: queue.append("sync"))
    monkeypatch.setattr(measure.torch.cuda, "_sleep", lambda cycles: queue.append("hold"))
    captured = {name: measure.Captured(Graph(name), None) for name in ("a", "b", "c")}
    timings = measure.time_interleaved(captured, samples=4)
    assert timings.samples == {name: [1.0] * 4 for name in captured}
    rounds = " ".join(queue).split(" sync")[1:-1]  # after the graphs' first (upload) replays
    assert len(rounds) == 4
    for round_ops in rounds:
        ops = round_ops.split()
        starts = [i for i, op in enumerate(ops) if op == "start"]
        assert len(starts) == 3
        # before the first timed sample: the hold, then a flush and an untimed replay; after the
        # last one, another flush and untimed replay
        assert (
            ops[0] == "hold"
            and sum(op.startswith("replay") for op in ops[: starts[0]]) == 1
            and ops[starts[0] - 1] == "flush"
        )
        last_end = max(i for i, op in enumerate(ops) if op == "end")
        assert ops[last_end + 1] == "flush" and ops[last_end + 2].startswith("replay") and len(ops) == last_end + 3


def test_settings_are_validated():
    with pytest.raises(BadInput, match="at least 10"):
        RunSettings(samples=5)
    with pytest.raises(BadInput, match="warmup calls must be at least 1"):
        RunSettings(warmup_calls=0)


def test_settings_cross_to_a_worker_whole_and_typed():
    # Every field away from its default: a field that the wire left out would come back as its
    # default and the worker would measure something else than was asked.
    settings = RunSettings(
        samples=41,
        warmup_calls=5,
        seed=7,
        variants=(("approximate", ("none", "tanh")),),
        kernels=("fused", "eager"),
        skipped=("gemm",),
        keep_sass=True,
        cases=("odd",),
        modes=("backward",),
    )
    defaults = RunSettings()
    assert all(getattr(settings, f.name) != getattr(defaults, f.name) for f in dataclasses.fields(RunSettings))
    wire = json.loads(json.dumps(settings.to_wire()))  # as a worker reads it: tuples made lists
    assert RunSettings.from_wire(wire) == settings
    for name in wire:
        dropped = {key: value for key, value in wire.items() if key != name}
        with pytest.raises(BadInput, match="expected the fields"):
            RunSettings.from_wire(dropped)
    with pytest.raises(BadInput, match="expected the fields"):
        RunSettings.from_wire({**wire, "unknown": 1})
    with pytest.raises(BadInput, match="samples must be of type int"):
        RunSettings.from_wire({**wire, "samples": "41"})
    with pytest.raises(BadInput, match="kernels must be of type tuple"):
        RunSettings.from_wire({**wire, "kernels": [1]})
    with pytest.raises(BadInput, match="samples must be at least"):  # validated as any RunSettings
        RunSettings.from_wire({**wire, "samples": 1})


def test_correctness_rule():
    ref = torch.randn(64, 32, dtype=torch.float64)
    assert correctness.check(ref.to(torch.bfloat16), ref, 1e-2).passed
    assert not correctness.check((ref * 1.01).float(), ref, 1e-5).passed
    broken = ref.clone().float()
    broken[3, 3] = float("nan")
    check = correctness.check(broken, ref, 1e-5)
    assert math.isnan(check.relative_error) and not check.passed
    assert not correctness.check(ref[:10], ref, 1e-5).passed  # another shape
    assert not correctness.check([ref], ref, 1e-5).passed  # not a tensor
    zero = torch.zeros(3, dtype=torch.float64)
    assert correctness.check(zero.float(), zero, 1e-5).passed  # a zero reference: the absolute error
    assert not correctness.check(zero.float() + 1, zero, 1e-5).passed


def test_reference_is_z1_times_gelu_of_z2(subject):
    x, w = torch.randn(5, 8), torch.randn(6, 8)
    z = x.double() @ w.double().T
    expected = z[:, :3] * 0.5 * z[:, 3:] * (1 + torch.erf(z[:, 3:] / math.sqrt(2)))
    assert torch.allclose(subject.subject.reference(x, w), expected)
    assert torch.allclose(subject.subject.reference(x, w, approximate="none"), expected)


ROLES = Settings(under_test=["mine"], bounds=["floor", "ceiling"])


def test_table_shows_the_fastest_baseline_and_each_bounds_share():
    def bench(kernel, ms, flops=2 * 1000 * 1000 * 1000, bytes=0):
        return Benchmark(
            kernel=kernel,
            shape={"M": 1000, "K": 1000, "N": 500},
            dtype="bfloat16",
            samples_ms=[ms] * 10,
            suite="s",
            case="c",
            flops=flops,
            bytes=bytes,
        )

    benchmarks = [
        bench("mine", 2.0, bytes=4_000_000),
        bench("slow", 3.0),
        bench("fast", 2.5),
        bench("floor", 1.5),  # counts flops: the share is in FLOP/s
        bench("ceiling", 1.0, flops=0, bytes=8_000_000),  # bytes only: the share is in bytes/s
    ]
    table = run_table(Results(Environment(), ROLES, benchmarks))
    cells = {column.header: list(column.cells) for column in table.columns}
    assert cells["vs fastest baseline"] == ["1.25× fast", "", "", "", ""]
    assert cells["of bound"] == ["75.0% floor, 25.0% ceiling", "", "", "", ""]
    assert cells["TFLOP/s"] == ["1.0", "0.7", "0.8", "1.3", ""]
    assert cells["shape"][0] == "M=1000 K=1000 N=500"
    # results that do not say which implementation is under test (format 1) show neither
    plain = run_table(Results(Environment(), Settings(), benchmarks))
    assert {cell for column in plain.columns[-2:] for cell in column.cells} == {""}


def test_environment_helpers(monkeypatch):
    assert clock_event_reasons(0x1 | 0x4) == ("gpu_idle", "sw_power_cap")
    assert clock_event_reasons(0x4000)[-1] == "unknown_0x4000"
    monkeypatch.delenv("PERFBOT_TRITON_COMMIT", raising=False)
    assert triton_commit("3.6.0+git7c56a5e4") == "7c56a5e4"
    assert triton_commit("3.6.0") == "7c56a5e40f7fd928dfd5c72902d5def0097db73a"
    assert triton_commit("9.9.9") is None
    monkeypatch.setenv("PERFBOT_TRITON_COMMIT", "f" * 40)
    assert triton_commit("9.9.9") == "f" * 40
    env = collect_environment()
    assert env.torch == torch.__version__


def test_markdown_table_matches_the_terminal_cells_and_escapes_pipes():
    from perfbot.output.run_tables import run_markdown

    bench = Benchmark(
        kernel="fu|sed",
        shape={"M": 10, "K": 20, "N": 30},
        dtype="float16",
        samples_ms=[0.5] * 10,
        suite="s",
        case="c",
        flops=2 * 10 * 20 * 60,
        bytes=100_000,
    )
    text = run_markdown(Results(Environment(), Settings(), [bench]))
    assert text == (
        "| suite | case | shape | dtype | implementation | median ms | samples | TFLOP/s | GB/s | vs fastest baseline"
        " | of bound |\n"
        "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|\n"
        "| s | c | M=10 K=20 N=30 | float16 | fu\\|sed | 0.5000 | 10 | 0.0 | 0 |  |  |\n"
    )


def _bench(kernel, ms, approximate="none", **fields):  # a GeGLU-like case, variant and all
    return Benchmark(
        kernel=kernel,
        shape={"M": 16, "K": 64, "N": 32},
        dtype="bfloat16",
        samples_ms=[ms] * 10,
        suite="s",
        case="c",
        variant={"approximate": approximate} if approximate != "none" else {},
        flops=2 * 16 * 64 * 64,
        **fields,
    )


def test_terminal_table_keeps_bracketed_kernel_names():
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(run_table(Results(Environment(), Settings(), [_bench("fused", 1.0, "tanh")])))
    assert "fused[approximate=tanh]" in console.export_text()


def test_case_view_puts_every_implementation_beside_the_kernel():
    from perfbot.output.run_tables import case_markdown

    results = Results(
        Environment(),
        Settings(under_test=["fused"], bounds=["gemm"]),
        [
            _bench("fused", 2.0),
            _bench("fused", 1.6, "tanh"),
            _bench("eager", 3.0),
            _bench("eager", 2.4, "tanh"),
            _bench("gemm", 1.8),
        ],
    )
    lines = case_markdown(results).splitlines()
    assert lines[0] == "| case | shape | dtype | variant | fused ms | eager ms | gemm ms | vs eager | vs gemm |"
    assert lines[2] == "| c | M=16 K=64 N=32 | bfloat16 | default | 2.0000 | 3.0000 | 1.8000 | 1.500 | 0.900 |"
    assert lines[3] == (
        "| c | M=16 K=64 N=32 | bfloat16 | approximate=tanh | 1.6000 | 2.4000 | 1.8000 | 1.500 | 1.125 |"
    )
    assert case_markdown(results, "eager").splitlines()[0].startswith("| case | shape | dtype | variant | eager ms |")
    with pytest.raises(BadInput, match="the results have no benchmark of 'copy'; they have eager, fused, gemm"):
        case_markdown(results, "copy")
    with pytest.raises(BadInput, match="do not say which implementation is under test"):
        case_markdown(dataclasses.replace(results, settings=Settings()))


def test_stability_counts_throttled_rounds_and_marks_drift():
    from perfbot.measuring.environment import stability
    from perfbot.measuring.measure import Round

    steady = stability([Round((), 1980)] * 5)
    assert steady == {"throttled_rounds": 0, "sm_clock_first_last_mhz": [1980, 1980]}
    drifted = stability([Round((), 1980), Round(("sw_thermal_slowdown",), 1900), Round(("hw_slowdown",), 1800)])
    assert drifted["throttled_rounds"] == 2
    assert drifted["throttle_reasons"] == ["hw_slowdown", "sw_thermal_slowdown"]
    assert "1980 -> 1800 MHz (-9.1%)" in drifted["clock_drift"]
    assert stability([Round(), Round()]) == {"throttled_rounds": 0}  # no NVML: nothing claimed


def test_results_say_whether_the_kernels_differ_from_their_commit(tmp_path):
    from perfbot.git import kernels_revision

    assert kernels_revision(tmp_path) == {"kernels_commit": None, "kernels_dirty": None}  # not a repository
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    (kernels / "geglu.py").write_text("A = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-qm", "k"], cwd=tmp_path, check=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    (tmp_path / "README.md").write_text("elsewhere in the repository\n")  # not the kernels: still clean
    assert kernels_revision(kernels) == {"kernels_commit": head, "kernels_dirty": False}
    (kernels / "geglu.py").write_text("A = 2\n")
    assert kernels_revision(kernels) == {"kernels_commit": head, "kernels_dirty": True}


def test_capturing_again_takes_every_key_once_in_an_order_no_side_always_leads(monkeypatch):
    import random

    order = []
    monkeypatch.setattr(measure, "capture", lambda fn, warmup, offset: order.append((fn(), offset)) or fn())
    keys = ["base:fused", "base:gemm", "head:fused", "head:gemm"]
    calls = {key: (lambda key=key: key) for key in keys}
    captured, rng = {}, random.Random(0)
    firsts = set()
    for _ in range(20):
        order.clear()
        measure.capture_again(captured, calls, keys, rng)
        assert sorted(key for key, _ in order) == keys and captured == {key: key for key in keys}
        assert all(offset % 256 == 0 and 0 <= offset < measure.MAX_OFFSET_BYTES for _, offset in order)
        first_of_fused = next(key for key, _ in order if key.endswith(":fused"))
        firsts.add(first_of_fused)
    assert firsts == {"base:fused", "head:fused"}  # either side of a pair may be captured first
