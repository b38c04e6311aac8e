"""The backward pass checked and timed (issue 54; docs/subject.md, "Backward modes"): a case is
timed in `forward`, `backward` or `forward+backward`, and the mode is part of a benchmark's
identity, as a variant is.

End to end on tests/backward_subject.py, an autotuned Triton product `x * w` whose forward and
backward are Triton kernels, called through a `torch.autograd.Function`, in Triton's interpreter
(check) and on the fake GPU (run, ab, the comment). The rules each in a test of its own: a wrong
gradient is caught per dtype and a right one passes; an output that does not require grad is a
wrong result; a suite naming an implementation in a mode it does not take is refused at load;
the mode is in the identity and old records read as forward; the timed backward neither runs
the forward nor adds into gradients from one replay to the next."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.deciding.compare import compare
from perfbot.deciding.thresholds import load_policy
from perfbot.errors import BadInput
from perfbot.history import steps_file
from perfbot.history.steps import bisect_argv
from perfbot.loading.declarations import differences
from perfbot.loading.package import load_subject
from perfbot.loading.subject import BACKWARD, FORWARD, FORWARD_BACKWARD, Case, Implementation, Subject, Suite
from perfbot.loading.suites import declared_suites, load_suites
from perfbot.measuring import groups, measure, modes
from perfbot.measuring.planning import Planned
from perfbot.records import results
from perfbot.records.run import Benchmark, Results, benchmark_key, variant_name
from tests.backward_subject import backward_repository
from tests.conftest import ROOT
from tests.helpers import make_results, samples
from tests.test_runner_cpu import _git

POLICY = load_policy(ROOT / "thresholds.yaml")


@pytest.fixture(autouse=True)
def wide(monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # each row of the check's table on one line


def _rows(output: str) -> dict[tuple[str, str], list[str]]:
    """The check table's result column, by (case, implementation), one entry per config."""
    found: dict[tuple[str, str], list[str]] = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) >= 8 and cells[0] == "quick":
            found.setdefault((cells[1], cells[3]), []).append(cells[-1])
    return found


# --- end to end: check (the interpreter), run, ab and the comment (the fake GPU) ---------------


def test_check_runs_each_mode_in_the_interpreter(tmp_path: Path):
    repo = backward_repository(tmp_path / "repo")
    result = CliRunner().invoke(perfbot, ["check", "--project", str(repo)])
    assert result.exit_code == 0, result.output
    rows = _rows(result.output)
    names = {"triton", "torch", "triton[backward]", "torch[backward]"}
    assert {name for case, name in rows if case == "odd"} == {
        *names,
        "triton[forward+backward]",
        "torch[forward+backward]",
    }
    assert {name for case, name in rows if case == "half"} == {"triton[backward]", "torch[backward]"}
    assert len(rows[("odd", "triton[backward]")]) == 2  # each config of the autotuned backward kernel
    assert all(result == "right" for found in rows.values() for result in found)
    assert "12 right, 0 wrong, of 12" in result.output


def test_check_catches_a_wrong_gradient_in_both_backward_modes(tmp_path: Path):
    repo = backward_repository(tmp_path / "repo", dx_factor="1.01")
    result = CliRunner().invoke(perfbot, ["check", "--project", str(repo), "--kernel", "triton"])
    assert result.exit_code == 1, result.output
    rows = _rows(result.output)
    assert rows[("odd", "triton")] == ["right", "right"]  # the forward is right
    for name in ("triton[backward]", "triton[forward+backward]"):
        assert all(r.startswith("wrong result in the gradient of input 0") for r in rows[("odd", name)]), rows
    assert all(r.startswith("wrong result in the gradient of input 0") for r in rows[("half", "triton[backward]")])


def test_check_of_an_output_that_does_not_require_grad_is_a_wrong_result(tmp_path: Path):
    repo = backward_repository(tmp_path / "repo", backward=False)
    result = CliRunner().invoke(perfbot, ["check", "--project", str(repo), "--kernel", "triton", "--mode", "backward"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    rows = _rows(result.output)
    assert set(rows) == {("odd", "triton[backward]"), ("half", "triton[backward]")}
    for found in rows.values():
        assert all(r.startswith("wrong result: its output does not require grad") for r in found)


def _run_json(repo: Path, out: Path, *extra: str) -> dict:
    result = CliRunner().invoke(perfbot, ["run", "--project", str(repo), "--samples", "10", "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return json.loads(out.read_text())


def test_run_times_each_mode_as_a_row_of_its_own(gpu, tmp_path: Path):
    repo = backward_repository(tmp_path / "repo")
    timed = _run_json(repo, tmp_path / "run.json", "--suite", "quick", "--case", "odd")
    assert timed["format"] == 4  # a row in another mode: a perfbot before modes refuses the file
    rows = {(b["kernel"], b.get("mode", "forward")): b for b in timed["benchmarks"]}
    assert set(rows) == {(k, m) for k in ("triton", "torch") for m in (FORWARD, BACKWARD, FORWARD_BACKWARD)}
    assert "mode" not in rows[("triton", FORWARD)]  # a forward row as before modes
    # flops(case) sees the mode: 1, 2 and 3 multiplies per element.
    assert [rows[("triton", m)]["flops"] for m in (FORWARD, BACKWARD, FORWARD_BACKWARD)] == [45, 90, 135]
    assert all(b["relative_error"] < 1e-6 for b in timed["benchmarks"])
    # Each captured call's autotuned kernels are recorded: the backward's is there.
    assert any(p["kernel"] == "_mul_backward_kernel" for p in rows[("triton", BACKWARD)]["autotune"])
    # A suite that times every implementation leaves the bound, forward only, out of the backward.
    pr = _run_json(repo, tmp_path / "pr.json", "--suite", "pr")
    assert {(b["kernel"], b.get("mode", "forward")) for b in pr["benchmarks"]} == {
        ("triton", FORWARD),
        ("torch", FORWARD),
        ("copy", FORWARD),
        ("triton", BACKWARD),
        ("torch", BACKWARD),
    }
    # --mode keeps the cases of that mode; a forward-only run is written as format 3, as before.
    forward = _run_json(repo, tmp_path / "forward.json", "--suite", "quick", "--case", "odd", "--mode", "forward")
    assert forward["format"] == 3 and all("mode" not in b for b in forward["benchmarks"])
    assert forward["settings"]["chosen_modes"] == ["forward"]
    assert {b["kernel"] for b in forward["benchmarks"]} == {"triton", "torch"}


@pytest.mark.slow  # two checkouts measured, about 5 CPU-s; the inner loop keeps run's rows per mode
def test_ab_judges_each_mode_apart_and_the_comment_names_it(gpu, tmp_path: Path, monkeypatch):
    """The head's backward 5% slower, its forward and forward+backward not: only the backward row
    fails, the second round that confirms it times that case's backward alone, and the comment
    names it `triton[backward]`."""
    from perfbot.jobs import ab

    repo = backward_repository(tmp_path / "repo")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "base")
    (repo / "NOTES").write_text("head\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "head")
    # The names timed once the second round starts, by the worker processes that time them.
    confirming = tmp_path / "confirming"
    first_judgement = ab.confirm

    def confirm(report, policy, remeasure):
        confirming.write_text("")
        return first_judgement(report, policy, remeasure)

    def ms(name: str, call: int) -> float:
        if confirming.exists():
            with confirming.open("a") as timed:
                timed.write(name + "\n")
        return 1.05 if name == "head:triton[backward]" else 1.0

    monkeypatch.setattr(ab, "confirm", confirm)
    gpu.ms = ms
    out = tmp_path / "ab"
    arguments = ["ab", "HEAD~1", "--project", str(repo), "--suite", "quick", "--case", "odd", "--samples", "12"]
    result = CliRunner().invoke(perfbot, [*arguments, "--out-dir", str(out)])
    assert result.exit_code == 1, result.output
    comparison = json.loads((out / "comparison.json").read_text())
    verdicts = {(r["benchmark"]["kernel"], r["benchmark"].get("mode", "forward")): r for r in comparison["comparisons"]}
    assert verdicts[("triton", BACKWARD)]["fails"], verdicts[("triton", BACKWARD)]
    assert verdicts[("triton", BACKWARD)]["change_percent"] > 3
    for mode in (FORWARD, FORWARD_BACKWARD):
        assert verdicts[("triton", mode)]["verdict"] == "unchanged", verdicts[("triton", mode)]
    assert "mode" not in verdicts[("triton", FORWARD)]["benchmark"]  # written as before modes
    assert "confirmed by a second interleaved round" in verdicts[("triton", BACKWARD)]["reason"]
    again = set(confirming.read_text().split())
    assert again == {f"{side}:{kernel}[backward]" for side in ("base", "head") for kernel in ("triton", "torch")}
    comment = (out / "comment.md").read_text()
    # The failing row named with its mode, its fastest baseline the baseline's row of that mode.
    failing = [line for line in comment.splitlines() if "❌ 🔺 regression" in line]
    assert len(failing) == 1 and failing[0].startswith("| triton\\[backward\\] · quick/odd · n=45 float32 |")
    assert "| 0.95× torch\\[backward\\] |" in failing[0]
    assert "| triton · quick/odd · n=45 float32 |" in comment  # a forward row as before modes
    head = results.load(out / "head.json")
    assert {b.name for b in head.benchmarks} >= {"triton", "triton[backward]", "triton[forward+backward]"}


def test_a_mode_no_chosen_case_is_timed_in_is_refused(gpu, tmp_path: Path):
    repo = backward_repository(tmp_path / "repo")
    result = CliRunner().invoke(perfbot, ["run", "--project", str(repo), "--suite", "pr", "--mode", "forward+backward"])
    assert result.exit_code == 2
    assert "--mode: no case of the chosen suites is timed in forward+backward; they are in backward, forward" in (
        result.output
    )
    result = CliRunner().invoke(perfbot, ["run", "--project", str(repo), "--mode", "sideways"])
    assert result.exit_code == 2 and "Invalid value for '--mode'" in result.output


def test_sample_and_the_history_name_one_benchmark_by_its_mode(gpu, tmp_path: Path):
    repo = backward_repository(tmp_path / "repo")
    gpu.ms = lambda name, call: 2.0 if name == "triton[backward]" else 1.0
    sample = ["sample", "--project", str(repo), "--suite", "quick", "--case", "half", "--kernel", "triton"]
    result = CliRunner().invoke(perfbot, [*sample, "--samples", "10"])
    assert result.exit_code == 0, result.output  # the case's first mode: half is timed backward alone
    assert [round(float(line)) for line in result.output.split()[-10:]] == [2] * 10
    result = CliRunner().invoke(perfbot, [*sample, "--samples", "10", "--mode", "forward"])
    assert result.exit_code == 2 and "case quick/half is not timed in forward, but in backward" in result.output
    odd = [*sample[:-3], "odd", "--kernel", "triton", "--samples", "10"]
    result = CliRunner().invoke(perfbot, odd)
    assert result.exit_code == 0 and round(float(result.output.split()[-1])) == 1  # odd's first mode, the forward
    result = CliRunner().invoke(perfbot, [*odd, "--mode", "backward"])
    assert result.exit_code == 0 and round(float(result.output.split()[-1])) == 2
    step = steps_file.Benchmark("quick", "half", "triton", {}, BACKWARD)
    assert "--case half --kernel triton --mode backward --samples 30" in " ".join(bisect_argv(step, "a", "b"))
    assert "--mode" not in " ".join(bisect_argv(steps_file.Benchmark("quick", "odd", "triton"), "a", "b"))


def test_history_follows_a_backward_row_as_a_series_of_its_own(tmp_path: Path):
    """A store whose runs time the subject's own kernel forward and backward, the backward 3%
    slower from run 25 on: the history finds the backward's step alone, names the row, and its
    bisect command times that mode."""
    from tests.history_store import make_runs, write_store

    runs = []
    for index, run in enumerate(make_runs(40, seed=11)):
        slower = 1.03 if index >= 24 else 1.0
        backward = [
            dataclasses.replace(b, mode=BACKWARD, samples_ms=[2 * slower * v for v in b.samples_ms])
            for b in run.benchmarks
            if b.kernel == "fused"
        ]
        runs.append(dataclasses.replace(run, benchmarks=[*run.benchmarks, *backward]))
    site = tmp_path / "site"
    store = str(write_store(tmp_path / "store", runs))
    result = CliRunner().invoke(perfbot, ["history", "--store", store, "--check", "--html", str(site)])
    assert result.exit_code == 1, result.output
    # The site lists a benchmark's modes as runs time them: its forward row first.
    page = (site / "index.html").read_text()
    forward, backward = page.find("fused · pr/"), page.find("fused[backward] · pr/")
    assert 0 <= forward < backward, (forward, backward)
    stepped = [line for line in result.output.splitlines() if line.startswith("NVIDIA H200 · ")]
    assert len(stepped) == 2 and all(line.startswith("NVIDIA H200 · fused[backward] · pr/") for line in stepped)
    assert "2 new step(s), 2 of them a recent slowdown" in result.output
    assert "--kernel fused --mode backward" in result.output


# --- the gradient check, per dtype -------------------------------------------------------------

TOLERANCE = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 1e-2}


class _Scaled(torch.autograd.Function):
    """y = 3 x w; its backward's dx multiplied by `factor` (1: right)."""

    factor = 1.0
    forwards = 0

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        _Scaled.forwards += 1
        return 3 * x * w

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        return 3 * dy * w * _Scaled.factor, 3 * dy * x


def _subject(**more) -> Subject:
    def make_inputs(case, generator):
        dtype = getattr(torch, case.dtype)
        return tuple(torch.randn(case.n, 7, generator=generator).to(dtype) for _ in range(2))

    subject = Subject(
        name="scaled",
        inputs=make_inputs,
        reference=lambda x, w: 3 * x.double() * w.double(),
        tolerance=TOLERANCE,
        suites={},
        **more,
    )
    subject.add(Implementation("scaled", lambda x, w: _Scaled.apply(x, w), under_test=True))
    subject.add(Implementation("detached", lambda x, w: (3 * x * w).detach()))
    return subject


def _checked(subject: Subject, kernel: str, mode: str, dtype: str = "float32"):
    case = Case("quick", "odd", {"n": 33}, dtype, mode)
    planned = Planned(case, kernel, (), "", subject.implementations[kernel], (), subject)
    return groups.check_group([planned], torch.Generator().manual_seed(0), subject)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("mode", [BACKWARD, FORWARD_BACKWARD])
def test_a_gradient_off_by_a_factor_is_wrong_and_a_right_one_passes(monkeypatch, dtype: str, mode: str):
    subject = _subject()
    ready, failures = _checked(subject, "scaled", mode, dtype)
    assert not failures and len(ready) == 1
    check = ready[0].check
    assert check.passed and check.relative_error <= TOLERANCE[dtype]
    monkeypatch.setattr(_Scaled, "factor", 1 + 3 * TOLERANCE[dtype])  # just past the dtype's tolerance
    ready, failures = _checked(subject, "scaled", mode, dtype)
    assert not ready and len(failures) == 1
    failure = failures[0][1]
    assert failure.reason == "wrong result in the gradient of input 0"
    assert failure.mode == mode and failure.error_bound == TOLERANCE[dtype]
    assert TOLERANCE[dtype] < failure.relative_error < 10 * TOLERANCE[dtype]


def test_grad_tolerance_applies_to_the_gradients_and_tolerance_to_the_output(monkeypatch):
    monkeypatch.setattr(_Scaled, "factor", 1.001)
    subject = _subject(grad_tolerance={"float32": 1e-2})
    ready, failures = _checked(subject, "scaled", FORWARD_BACKWARD)
    assert not failures and ready[0].bound == (1e-5, 1e-2, 1e-2)
    ready, failures = _checked(_subject(), "scaled", FORWARD_BACKWARD)
    assert not ready and failures[0][1].error_bound == 1e-5  # without grad_tolerance: the tolerance's


def test_grad_inputs_chooses_what_is_differentiated(monkeypatch):
    monkeypatch.setattr(_Scaled, "factor", 2.0)  # dx wrong, dw right
    ready, failures = _checked(_subject(grad_inputs=[1]), "scaled", BACKWARD)
    assert not failures and ready[0].gradients.positions == (1,) and ready[0].parts == ("the gradient of input 1",)
    ready, failures = _checked(_subject(grad_inputs=[0, 1]), "scaled", BACKWARD)
    assert not ready and failures[0][1].reason == "wrong result in the gradient of input 0"
    with pytest.raises(BadInput, match="grad_inputs names input 2, which is not a floating-point tensor"):
        _checked(_subject(grad_inputs=[2]), "scaled", BACKWARD)


def test_a_reference_that_cannot_be_differentiated_is_refused_in_one_line():
    subject = _subject()
    subject.reference = lambda x, w: (3 * x.double() * w.double()).detach()
    with pytest.raises(BadInput) as error:
        _checked(subject, "scaled", BACKWARD)
    assert str(error.value) == (
        "subject 'scaled': the reference (case quick/odd) raised ValueError: it returned an output that does not "
        "require grad, of which no gradient can be taken on float64 leaves"
    )
    subject.reference = lambda x, w: (3 * x.double() * w.double(),)  # a tuple, in the forward: refused as ever
    with pytest.raises(BadInput, match="returned a tuple, not a tensor"):
        _checked(subject, "scaled", FORWARD)


def test_each_kernel_family_differentiates_as_it_declares(tmp_path: Path, monkeypatch):
    """Of a package's `subjects`, each family's grad_inputs and grad_tolerance hold for its own
    cases: family a differentiates its second input alone, b both (and its dx is wrong)."""
    from perfbot.loading.families import combine

    monkeypatch.setattr(_Scaled, "factor", 2.0)
    a, b = _subject(grad_inputs=[1], grad_tolerance={"float32": 1e-3}), _subject()
    a.name, b.name = "a", "b"
    for family in (a, b):
        cases = tuple(Case("quick", "odd", {"n": 33}, "float32", mode) for mode in (FORWARD, BACKWARD))
        family.suites = {"quick": Suite("quick", "", ("scaled",), cases)}
    combined, suites = combine(tmp_path, [a, b])
    checked = {}
    for name in ("a", "b"):
        case = next(c for c in suites[f"{name}/quick"].cases if c.mode == BACKWARD)
        impl = combined.implementations[f"{name}/scaled"]
        group = [Planned(case, impl.name, (), "", impl, (), combined)]
        checked[name] = groups.check_group(group, torch.Generator().manual_seed(0), combined)
    (ready,), _ = checked["a"]
    assert ready.gradients.positions == (1,) and ready.bound == (1e-3,)
    assert not checked["b"][0] and checked["b"][1][0][1].reason == "wrong result in the gradient of input 0"


def test_an_output_that_does_not_require_grad_is_a_wrong_result_in_one_line():
    ready, failures = _checked(_subject(), "detached", BACKWARD)
    assert not ready
    reason = failures[0][1].reason
    assert reason.startswith("wrong result: its output does not require grad") and "\n" not in reason
    ready, failures = _checked(_subject(), "detached", FORWARD)  # its forward is right
    assert ready and not failures


def test_a_result_of_parts_is_judged_by_its_first_wrong_part_else_its_nearest_to_its_bound():
    from perfbot.measuring import correctness

    ref = (torch.ones(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64))
    near = (torch.ones(4) * 1.0005, torch.ones(4) * 1.004)  # errors 5e-4 and 4e-3
    check = correctness.check(near, ref, (1e-2, 1e-2), ("a", "b"))
    assert check.passed and check.part == "b" and abs(check.relative_error - 4e-3) < 1e-6  # 0.4 of its bound
    check = correctness.check(near, ref, (1e-3, 1e-2), ("a", "b"))
    assert check.passed and check.part == "a"  # 0.5 of its bound, b 0.4 of its
    wrong = (torch.ones(4) * 1.002, torch.ones(4) * 1.5)
    check = correctness.check(wrong, ref, (1e-3, 1e-2), ("a", "b"))
    assert not check.passed and check.part == "a" and check.bound == 1e-3
    assert correctness.check(near[:1], ref, 1e-2).why == "a 1 tensors, not 2 tensors"


def test_an_output_of_another_dtype_gets_the_grad_output_in_its_own(monkeypatch):
    subject = _subject()
    subject.add(Implementation("wider", lambda x, w: _Scaled.apply(x.float(), w.float())))
    ready, failures = _checked(subject, "wider", BACKWARD, "float16")
    assert not failures and ready[0].check.passed
    assert ready[0].gradients.grad_output.dtype == torch.float16


def test_a_case_without_a_floating_point_input_has_nothing_to_differentiate():
    subject = _subject()
    subject.inputs = lambda case, generator: (torch.arange(4),)
    with pytest.raises(BadInput, match=r"inputs\(case quick/odd\) holds no floating-point tensor to differentiate"):
        _checked(subject, "scaled", BACKWARD)


# --- the timed call ----------------------------------------------------------------------------


def _timed(mode: str):
    x, w = torch.randn(5, 3), torch.randn(5, 3)
    given = modes.leaves((x, w), (0, 1))
    gradients = modes.Gradients((0, 1), torch.randn(5, 3))
    call = modes.timed_call(mode, lambda: _Scaled.apply(*given), given, gradients, "scaled")
    return call, given, gradients


def test_the_timed_backward_does_not_run_the_forward_nor_add_into_gradients():
    call, given, gradients = _timed(BACKWARD)
    assert isinstance(call, measure.Staged)
    before = _Scaled.forwards
    call.before()
    assert _Scaled.forwards == before + 1
    first = call.call()
    second = call.call()  # as a replay does: the same gradients, not twice them
    assert _Scaled.forwards == before + 1
    assert all(torch.equal(a, b) for a, b in zip(first, second, strict=True))
    assert torch.allclose(first[0], 3 * gradients.grad_output * given[1].detach())
    assert all(leaf.grad is None for leaf in given)  # returned, never accumulated into .grad


def test_each_forward_of_the_timed_backward_lets_the_last_ones_graph_go_first():
    """On the GPU, a forward whose grad inputs' autograd nodes a former forward (the check's, on
    the default stream) still holds breaks the backward's capture on the capture stream: the
    stage drops its last output before it calls the forward again."""
    x, w = torch.randn(5, 3), torch.randn(5, 3)
    given = modes.leaves((x, w), (0, 1))
    held: list[object] = []
    stage: list[Any] = []

    def forward():
        held.append(stage[0].out)
        return _Scaled.apply(*given)

    call = modes.timed_call(BACKWARD, forward, given, modes.Gradients((0, 1), torch.randn(5, 3)), "scaled")
    assert isinstance(call, measure.Staged)
    stage.append(call.before.__self__)  # type: ignore[attr-defined]  # the bound method's stage
    call.before()
    call.call()
    call.before()
    assert held == [None, None]
    assert stage[0].out is not None


def test_a_backwards_launches_on_autograds_own_thread_are_the_waiting_threads():
    """On a GPU autograd runs a backward on a thread of its own (measured on an H100: the
    experiment's backward_threads.py); here another thread runs one on the CPU. Its launches count
    as the recording thread's while that thread waits on a backward, and only then; launches of
    another thread outside any backward never do."""
    import threading

    from triton.compiler.compiler import CompiledKernel

    from perfbot.compiling import launches

    class Compiled:
        """What launch_metadata reads of a compiled kernel: there is none without a GPU."""

        name, function, src = "k", None, None

        def _init_handles(self):
            pass

    kernel = Compiled()

    class Launching(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return 2 * x

        @staticmethod
        def backward(ctx, grad):
            CompiledKernel.launch_metadata(kernel, (3,), None)
            return 2 * grad

    def backward_elsewhere():
        x = torch.randn(3, requires_grad=True)
        torch.autograd.grad(Launching.apply(x), (x,), torch.ones(3))

    def elsewhere(work):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()

    with launches.recording() as seen, launches.backward_of_this_thread():
        elsewhere(backward_elsewhere)
        elsewhere(lambda: CompiledKernel.launch_metadata(kernel, (5,), None))  # no backward
    assert [(grid, count) for _, grid, count in seen.each()] == [((3, 1, 1), 1)]
    with launches.recording() as seen:  # not waiting on a backward: another thread's are its own
        elsewhere(backward_elsewhere)
    assert seen.count == 0


def test_forward_and_backward_is_one_call_of_both():
    call, given, gradients = _timed(FORWARD_BACKWARD)
    assert not isinstance(call, measure.Staged)
    before = _Scaled.forwards
    out, _, dw = call()
    assert _Scaled.forwards == before + 1
    assert not out.requires_grad and torch.allclose(out, 3 * given[0].detach() * given[1].detach())
    assert torch.allclose(dw, 3 * gradients.grad_output * given[0].detach())


def test_the_fresh_recheck_catches_a_backward_kept_across_calls(gpu):
    """A backward that returns what it computed first (keyed on nothing): timed, its graph
    replayed on fresh inputs is wrong, as a forward that keeps its result is."""
    kept: list[torch.Tensor] = []

    class Kept(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return 3 * x * w

        @staticmethod
        def backward(ctx, dy):
            x, w = ctx.saved_tensors
            if not kept:
                kept.extend([3 * dy * w, 3 * dy * x])
            return kept[0].clone(), kept[1].clone()

    subject = _subject()
    subject.add(Implementation("kept", lambda x, w: Kept.apply(x, w)))
    ready, failures = _checked(subject, "kept", BACKWARD)
    assert ready and not failures
    captured = {r.planned.key: measure.capture(r.call, 1) for r in ready}
    wrong = groups.recheck_fresh(ready, captured, subject, "cpu")
    assert list(wrong) == ["kept[backward]"] and "wrong on 2 of 2 draws" in wrong["kept[backward]"]
    ready, _ = _checked(subject, "scaled", BACKWARD)
    captured = {r.planned.key: measure.capture(r.call, 1) for r in ready}
    assert groups.recheck_fresh(ready, captured, subject, "cpu") == {}


# --- suites, loading and identity ---------------------------------------------------------------


def _suites_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suites.yaml"
    path.write_text(text)
    return path


def test_a_mode_list_times_a_case_once_in_each_and_a_case_overrides_the_suite(tmp_path: Path):
    subject = _subject()
    text = (
        "quick:\n  dtype: float32\n  mode: [forward, backward]\n  implementations: [scaled]\n  cases:\n"
        "    - {name: odd, n: 33}\n    - {name: step, n: 8, mode: forward+backward}\n"
    )
    suite = load_suites(_suites_file(tmp_path, text), subject)["quick"]
    assert [(c.name, c.mode) for c in suite.cases] == [("odd", FORWARD), ("odd", BACKWARD), ("step", FORWARD_BACKWARD)]
    plain = load_suites(_suites_file(tmp_path, "quick:\n  dtype: float32\n  cases: [{name: a, n: 1}]\n"), subject)
    assert [c.mode for c in plain["quick"].cases] == [FORWARD]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("mode: sideways\n", "unknown mode 'sideways'; modes: forward, backward, forward+backward"),
        ("mode: [backward, backward]\n", "names a mode twice"),
        ("mode: []\n", "mode: should be"),
    ],
)
def test_a_bad_mode_is_bad_input(tmp_path: Path, text: str, words: str):
    path = _suites_file(tmp_path, "quick:\n  dtype: float32\n  " + text + "  cases: [{name: a, n: 1}]\n")
    with pytest.raises(BadInput) as error:
        load_suites(path, _subject())
    assert words in str(error.value) and "\n" not in str(error.value)


def test_an_implementation_named_in_a_mode_it_does_not_take_is_refused_at_load(tmp_path: Path):
    subject = _subject()
    subject.add(Implementation("copy", lambda x, w: x.clone(), bound=True))
    subject.add(Implementation("fwd", lambda x, w: x * w, modes=("forward",)))
    for name, modes_said in (("copy", "forward, as a bound"), ("fwd", "forward")):
        text = (
            f"quick:\n  dtype: float32\n  mode: backward\n  implementations: [{name}]\n  cases: [{{name: a, n: 1}}]\n"
        )
        with pytest.raises(BadInput) as error:
            load_suites(_suites_file(tmp_path, text), subject)
        message = str(error.value)
        assert f"case 'a': implementation {name!r} is not timed in mode 'backward' (its modes: {modes_said})" in message
        assert "\n" not in message
    # In Python, alike; and modes= says otherwise.
    case = Case("quick", "a", {"n": 1}, "float32", BACKWARD)
    subject.suites = {"quick": Suite("quick", "", ("copy",), (case,))}
    with pytest.raises(BadInput, match="implementation 'copy' is not timed in mode 'backward'"):
        declared_suites(tmp_path, subject)
    subject.add(Implementation("both", lambda x, w: x * w, bound=True, modes=("forward", "backward")))
    subject.suites = {"quick": Suite("quick", "", ("both",), (case,))}
    assert declared_suites(tmp_path, subject)["quick"].cases[0].mode == BACKWARD


def test_a_suite_naming_an_implementation_in_a_mode_it_lacks_exits_2(tmp_path: Path):
    repo = backward_repository(tmp_path / "repo")
    suites = repo / "perf" / "suites.yaml"
    suites.write_text(suites.read_text().replace("implementations: [triton, torch]", "implementations: [triton, copy]"))
    result = CliRunner().invoke(perfbot, ["check", "--project", str(repo)])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("perfbot: ") and "warning" not in line]
    assert len(lines) == 1 and "implementation 'copy' is not timed in mode 'backward'" in lines[0], result.output


@pytest.mark.parametrize(("given", "said"), [("backward", "got 'backward'"), ((), "got ()")])
def test_modes_given_as_no_tuple_of_modes_is_refused_naming_what_was_given(tmp_path: Path, given, said: str):
    from perfbot.loading.checks import check_subject

    subject = Subject(name="m", inputs=lambda case, generator: (), reference=lambda: None, tolerance={"float32": 1e-6})
    subject.implementation("torch", modes=given)(lambda x, w: x * w)
    with pytest.raises(BadInput) as error:
        check_subject(tmp_path, subject)
    assert f"implementation 'torch': modes= must list some of forward, backward, forward+backward, {said}" in str(
        error.value
    )


def test_suites_lists_a_case_in_each_of_its_modes(tmp_path: Path):
    repo = backward_repository(tmp_path / "repo")
    declared = CliRunner().invoke(perfbot, ["suites", "--project", str(repo), "--json"])
    assert declared.exit_code == 0, declared.output
    suites = json.loads(declared.output)["suites"]
    assert suites["quick"]["cases"] == ["odd", "half"]  # names, each once, as before modes
    assert suites["quick"]["modes"] == {"odd": [FORWARD, BACKWARD, FORWARD_BACKWARD], "half": [BACKWARD]}
    assert suites["pr"]["modes"] == {"odd": [FORWARD, BACKWARD]}
    forward = CliRunner().invoke(perfbot, ["suites", "--project", str(ROOT / "examples" / "rmsnorm"), "--json"])
    assert forward.exit_code == 0, forward.output
    assert all(set(suite) == {"implementations", "cases"} for suite in json.loads(forward.output)["suites"].values())
    result = CliRunner().invoke(perfbot, ["suites", "--project", str(repo)])
    assert result.exit_code == 0, result.output
    odd = [line.split() for line in result.output.splitlines() if line.startswith("  odd ")]
    assert odd[:3] == [
        ["odd", "n=45", "float32"],
        ["odd", "n=45", "float32", "backward"],
        ["odd", "n=45", "float32", "forward+backward"],
    ]


def test_the_declarations_of_modes_that_differ_between_the_sides_are_listed(tmp_path: Path):
    base = backward_repository(tmp_path / "base")
    head = backward_repository(tmp_path / "head")
    suites = head / "perf" / "suites.yaml"
    suites.write_text(suites.read_text().replace("mode: [forward, backward, forward+backward]", "mode: forward"))
    subject = head / "perf" / "__init__.py"
    edited = subject.read_text().replace('grad_tolerance={"float32": 1e-6', 'grad_tolerance={"float32": 1e-3')
    subject.write_text(edited.replace('("copy", bound=True,', '("copy", bound=True, modes=["forward"],'))
    mine, theirs = load_subject(base / "perf"), load_subject(head / "perf")
    lines = differences(mine, theirs, list(mine.suites.values()))
    assert "suite quick: case odd (backward) only on the base, or changed" in lines
    assert "suite quick: case odd (forward+backward) only on the base, or changed" in lines
    assert "suite quick: case odd only on the base, or changed" not in lines  # its forward is on both
    assert any(line.startswith("subject grad_tolerance: {'float32': 1e-06") for line in lines), lines
    assert "implementation copy modes: None on the base, ('forward',) on the head" in lines


def test_mode_is_in_a_benchmarks_identity_and_its_name():
    assert benchmark_key("k", {}, {"n": 1}, "float32") == ("k", (), (("n", 1),), "float32")  # as before modes
    assert benchmark_key("k", {}, {"n": 1}, "float32", FORWARD) == benchmark_key("k", {}, {"n": 1}, "float32")
    assert benchmark_key("k", {}, {"n": 1}, "float32", BACKWARD) != benchmark_key("k", {}, {"n": 1}, "float32")
    assert variant_name("k", {}) == "k" and variant_name("k", {"a": "1"}, FORWARD) == "k[a=1]"
    assert variant_name("k", {}, BACKWARD) == "k[backward]"
    assert variant_name("k", {"a": "1"}, FORWARD_BACKWARD) == "k[a=1,forward+backward]"


def _one(run: Results, *rows: Benchmark) -> Results:
    return dataclasses.replace(run, benchmarks=list(rows))


def test_a_forward_and_a_backward_row_of_one_case_never_compare_against_each_other():
    """The baseline has the forward alone; the current run the backward alone, far slower: no
    pair, so no slowdown (the backward added, the forward missing). With both rows on both sides, each pairs with
    its own mode: the backward's 10% is the backward row's, the forward is unchanged."""
    run = make_results()
    forward = next(b for b in run.benchmarks if b.kernel == "fused")
    backward = dataclasses.replace(forward, mode=BACKWARD, samples_ms=samples(3 * forward.median_ms))
    report = compare(_one(run, forward), _one(run, backward), POLICY)
    assert not report.comparisons
    assert [b.mode for b in report.added] == [BACKWARD]
    assert [f.mode for f in report.missing] == [FORWARD]  # the baseline's own forward row, not timed
    slower = dataclasses.replace(backward, samples_ms=samples(3.3 * forward.median_ms, seed=1))
    both = compare(_one(run, forward, backward), _one(run, forward, slower), POLICY)
    by_mode = {c.current.mode: c for c in both.comparisons}
    assert by_mode[BACKWARD].verdict == "regression" and by_mode[FORWARD].verdict == "unchanged"
    assert by_mode[BACKWARD].baseline.mode == BACKWARD


def test_a_run_cut_down_to_a_mode_does_not_miss_the_others():
    run = make_results()
    forward = next(b for b in run.benchmarks if b.kernel == "fused")
    backward = dataclasses.replace(forward, mode=BACKWARD)
    baseline = _one(run, forward, backward)
    assert [f.mode for f in compare(baseline, _one(run, forward), POLICY).missing] == [BACKWARD]
    cut = dataclasses.replace(_one(run, forward), settings=dataclasses.replace(run.settings, chosen_modes=[FORWARD]))
    assert compare(baseline, cut, POLICY).missing == ()


def test_an_old_record_without_a_mode_reads_as_forward_and_matches_a_new_forward_row(tmp_path: Path):
    run = make_results()
    forward = next(b for b in run.benchmarks if b.kernel == "fused")
    written = _one(run, forward).to_json()
    assert written["format"] == 3 and all("mode" not in b for b in written["benchmarks"])
    path = tmp_path / "old.json"
    path.write_text(json.dumps(written))
    old = results.load(path)
    assert old.benchmarks[0].mode == FORWARD and old.benchmarks[0].key == forward.key
    assert forward.key == benchmark_key(forward.kernel, forward.variant, forward.shape, forward.dtype)
    backward = dataclasses.replace(forward, mode=BACKWARD)
    path.write_text(json.dumps(_one(run, forward, backward).to_json()))
    again = results.load(path)
    assert [b.mode for b in again.benchmarks] == [FORWARD, BACKWARD] and json.loads(path.read_text())["format"] == 4
    assert again.peer(again.benchmarks[1], "fused") is again.benchmarks[1]  # a backward row's peer is backward


# --- on the GPU: the graphs themselves ---------------------------------------------------------


class _ScaledFromCopies(torch.autograd.Function):
    """y = 3 x w, its backward reading copies of x and w that its forward made (as a kernel saves
    what it computed), not the inputs themselves: a backward replayed alone reads the forward's."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x.clone(), w.clone())
        return 3 * x * w

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        return 3 * dy * w, 3 * dy * x


@pytest.mark.gpu
def test_on_the_gpu_the_timed_graph_replays_the_backward_and_the_recheck_its_forward_too():
    x, w = (torch.randn(4096, device="cuda") for _ in range(2))
    given = modes.leaves((x, w), (0, 1))
    gradients = modes.Gradients((0, 1), torch.randn(4096, device="cuda"))
    call = modes.timed_call(BACKWARD, lambda: _ScaledFromCopies.apply(*given), given, gradients, "scaled")
    captured = measure.capture(call, 2)
    assert captured.before is not None
    for _ in range(3):  # as a timer replays it: the gradients of the one forward, never added up
        captured.graph.replay()
    torch.cuda.synchronize()
    dx, dw = (g.clone() for g in captured.output)
    assert torch.allclose(dx, 3 * gradients.grad_output * w) and torch.allclose(dw, 3 * gradients.grad_output * x)
    with torch.no_grad():  # fresh inputs, written where the graphs read them
        x.copy_(torch.randn_like(x))
        w.copy_(torch.randn_like(w))
    captured.graph.replay()  # the backward alone reads what the forward saved: copies of the old inputs
    torch.cuda.synchronize()
    assert torch.equal(captured.output[0], dx)
    fresh_dx, fresh_dw = measure.replay(captured)  # the forward's graph first: the fresh inputs
    assert torch.allclose(fresh_dx, 3 * gradients.grad_output * w) and torch.allclose(
        fresh_dw, 3 * gradients.grad_output * x
    )


@pytest.mark.gpu
def test_on_the_gpu_run_times_each_mode(tmp_path: Path):
    repo = backward_repository(tmp_path / "repo")
    timed = _run_json(repo, tmp_path / "run.json", "--suite", "quick")
    modes_timed = {(b["kernel"], b["case"], b.get("mode", "forward")) for b in timed["benchmarks"]}
    assert modes_timed == {
        *((k, "odd", m) for k in ("triton", "torch") for m in (FORWARD, BACKWARD, FORWARD_BACKWARD)),
        ("triton", "half", BACKWARD),
        ("torch", "half", BACKWARD),
    }
    assert not timed["failures"]
    # What is timed of each mode, as compiled: the backward's kernel alone, and both in a step.
    compiled = {
        b.get("mode", "forward"): [k["name"] for k in b["compiled"]["kernels"]]
        for b in timed["benchmarks"]
        if b["kernel"] == "triton" and b["case"] == "odd"
    }
    assert compiled == {
        FORWARD: ["_mul_kernel"],
        BACKWARD: ["_mul_backward_kernel"],
        FORWARD_BACKWARD: ["_mul_kernel", "_mul_backward_kernel"],
    }
