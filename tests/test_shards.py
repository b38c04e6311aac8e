"""A run shared out across the GPUs of one host (perfbot/measuring/shards.py), on the CPU: real
worker processes, one per (stand-in) GPU, each pinned with CUDA_VISIBLE_DEVICES and loading the
real kernels (the fused one in Triton's interpreter); only the GPU's primitives are replaced
(tests/fake_gpu.install_in_worker), with timings that show which GPU took them."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.errors import BadInput
from perfbot.loading.package import load_subject
from perfbot.measuring import shards
from perfbot.measuring.planning import RunSettings
from tests.conftest import ROOT
from tests.fake_gpu import install_in_worker, install_selftest_in_worker

H200 = "NVIDIA H200"
TWO = [shards.Gpu(0, H200, "GPU-aaa"), shards.Gpu(1, H200, "GPU-bbb")]
SUITES = """
tiny:
  about: small enough for the interpreter
  dtype: float16
  kernels: [fused, eager, gemm]
  cases:
    - {name: a, M: 16, K: 32, N: 16}
    - {name: b, M: 33, K: 40, N: 24}
    - {name: c, M: 8, K: 16, N: 32}
    - {name: d, M: 64, K: 64, N: 64}
"""


def test_cuda_visible_devices_narrows_and_orders_the_gpus():
    gpus = [*TWO, shards.Gpu(2, "NVIDIA A100", "GPU-ccc")]
    assert shards.restrict_to_visible(gpus, None) == gpus
    assert shards.restrict_to_visible(gpus, "2,0") == [gpus[2], gpus[0]]
    assert shards.restrict_to_visible(gpus, "GPU-bbb") == [gpus[1]]
    assert shards.restrict_to_visible(gpus, "1,7,0") == [gpus[1]]  # CUDA stops at an unknown entry


def test_gpus_of_different_models_are_refused_unless_asked():
    mixed = [*TWO, shards.Gpu(2, "NVIDIA A100", "GPU-ccc")]
    assert shards.choose(mixed, None) == TWO  # by default, those of the first GPU's model
    with pytest.raises(BadInput, match="different models"):
        shards.choose(mixed[::-1], 2)
    assert shards.choose(mixed, None, mixed=True) == mixed
    assert shards.choose(mixed, 2) == TWO  # the first two are of one model
    with pytest.raises(BadInput, match="only 3 GPU"):
        shards.choose(mixed, 4)


def test_a_plain_run_sharded_across_two_gpus_merges_in_order_and_names_each_gpu(project):
    (project / "kernels" / "suites.yaml").write_text(SUITES)
    subject = load_subject(project / "kernels")
    job = shards.Job({"": project / "kernels"}, RunSettings(samples=10))
    seen = []
    results = shards.measure_sharded(
        job, [subject.suites["tiny"]], TWO, lambda label, steps: seen.append((label, steps)), setup=install_in_worker
    )[""]
    assert [b.case for b in results.benchmarks] == [c for c in "abcd" for _ in range(3)]  # the suite's order
    assert results.settings.gpus == ["0: NVIDIA H200", "1: NVIDIA H200"]
    for bench in results.benchmarks:  # the label is the GPU the worker was pinned to
        index = int(bench.gpu.split(":")[0])
        assert bench.samples_ms[0] == pytest.approx(1 + index / 10, rel=0.02)
    assert len(seen) == 4 and all(steps == 1 + 10 for _, steps in seen)
    assert results.failures == [] and all(b.relative_error <= b.error_bound for b in results.benchmarks)


@pytest.mark.slow
def test_an_ab_sharded_keeps_both_sides_of_a_pair_on_one_gpu_and_stops_each_pair_when_decided(project, tmp_path):
    from perfbot.deciding.thresholds import load_policy
    from perfbot.measuring.sequential import PolicyRules, Stopping

    (project / "kernels" / "suites.yaml").write_text(SUITES)
    subject = load_subject(project / "kernels")
    rules = PolicyRules(load_policy(project / "thresholds.yaml"), H200)
    stopping = Stopping(first=20, most=400, seconds=120, rules=rules)
    kernels = {"base": project / "kernels", "head": project / "kernels"}
    job = shards.Job(kernels, RunSettings(samples=20), stopping)
    measured = shards.measure_sharded(job, [subject.suites["tiny"]], TWO, setup=install_in_worker)
    base = {(b.case, b.kernel): b for b in measured["base"].benchmarks}
    head = {(b.case, b.kernel): b for b in measured["head"].benchmarks}
    assert base.keys() == head.keys() and len(base) == 12
    for key, bench in head.items():
        assert bench.gpu == base[key].gpu  # a pair is timed on one GPU
        assert len(bench.samples_ms) == len(base[key].samples_ms) >= 20
    assert "sequential" in measured["head"].settings.stopping


@pytest.mark.slow
def test_a_case_sharded_comes_back_for_its_second_turn_on_the_gpu_that_began_it(project, monkeypatch):
    from perfbot.deciding.thresholds import load_policy
    from perfbot.measuring.sequential import PolicyRules, Stopping, first_look

    (project / "kernels" / "suites.yaml").write_text(SUITES)
    subject = load_subject(project / "kernels")
    monkeypatch.setenv("NOISY_GEMM_IN_WORKER", "1")
    rules = PolicyRules(load_policy(project / "thresholds.yaml"), H200)
    first = first_look(20, 0.01)
    # a budget spent by the first looks: gemm's pairs are undecided when each case's share runs out
    stopping = Stopping(first=first, most=4000, seconds=0.05, rules=rules)
    kernels = {"base": project / "kernels", "head": project / "kernels"}
    job = shards.Job(kernels, RunSettings(samples=20), stopping)
    measured = shards.measure_sharded(job, [subject.suites["tiny"]], TWO, setup=install_in_worker)
    base = {(b.case, b.kernel): b for b in measured["base"].benchmarks}
    head = {(b.case, b.kernel): b for b in measured["head"].benchmarks}
    assert list(base) == [(case, kernel) for case in "abcd" for kernel in ("fused", "eager", "gemm")]
    for case in "abcd":  # gemm went on past the first look, in a second turn on the same GPU
        gemm = head[(case, "gemm")]
        assert len(gemm.samples_ms) == len(base[(case, "gemm")].samples_ms) > first
        assert gemm.gpu == base[(case, "gemm")].gpu == head[(case, "fused")].gpu


@pytest.mark.slow
def test_a_worker_that_dies_is_refused_naming_its_gpu(project, monkeypatch):
    # It runs the subject's code, which can end it (os._exit, a crash): refused, exit 2.
    from perfbot.measuring.children import SubjectQuit

    (project / "kernels" / "suites.yaml").write_text(SUITES)
    subject = load_subject(project / "kernels")
    monkeypatch.setenv("DIE_IN_WORKER", "1")  # the worker on GPU 1 exits at its first sample
    job = shards.Job({"": project / "kernels"}, RunSettings(samples=10))
    with pytest.raises(SubjectQuit, match=r"GPU 1: NVIDIA H200: the worker ended \(exit 9\) before it answered"):
        shards.measure_sharded(job, [subject.suites["tiny"]], TWO, setup=install_in_worker)


def test_stability_is_judged_per_gpu_never_across_two():
    from perfbot.measuring.environment import stability_across
    from perfbot.measuring.measure import Round

    steady_fast = [Round((), 1980)] * 3
    steady_slow = [Round(("sw_power_cap",), 1600)] * 2
    merged = stability_across([steady_fast, steady_slow])
    assert merged["throttled_rounds"] == 2 and merged["throttle_reasons"] == ["sw_power_cap"]
    assert "clock_drift" not in merged  # 1980 then 1600 MHz, but on two GPUs


def test_cli_refuses_more_gpus_than_visible_and_an_unknown_skipped_kernel(project, monkeypatch):
    monkeypatch.setattr(shards, "visible_gpus", lambda: TWO)
    result = CliRunner().invoke(perfbot, ["run", "--project", str(project), "--gpus", "3"])
    assert result.exit_code == 2 and "only 2 GPU(s) visible" in result.output
    monkeypatch.setattr(shards, "visible_gpus", lambda: [TWO[0], shards.Gpu(1, "NVIDIA A100")])
    result = CliRunner().invoke(perfbot, ["run", "--project", str(project), "--gpus", "2"])
    assert result.exit_code == 2 and "--mixed-gpus" in result.output
    result = CliRunner().invoke(perfbot, ["run", "--project", str(project), "--gpus", "1", "--skip-kernel", "nope"])
    assert result.exit_code == 2 and "nope" in result.output


@pytest.mark.slow
def test_a_selftest_shares_its_checks_out_across_gpus(project):
    from perfbot.deciding.thresholds import load_policy
    from perfbot.measuring import selftest

    (project / "kernels" / "suites.yaml").write_text(SUITES)
    policy = load_policy(project / "thresholds.yaml")
    plan = selftest.Plan(project / "kernels", "tiny", "a", "fused", (0.5, 2.0), 30, 400, policy)
    assert selftest.shares(5, 2) == [3, 2] and selftest.shares(1, 2) == [1, 0]
    done = []
    parts = shards.on_each_gpu(
        TWO, selftest.checks_in_worker, [(plan, 3), (plan, 2)], done.append, setup=install_selftest_in_worker
    )
    assert [len(part) for part in parts] == [3, 2] and sorted(gpu.index for gpu in done) == [0, 1]
    result = selftest.tally([check for part in parts for check in part], (0.5, 2.0), policy)
    assert result.false_alarms.flagged == 0
    assert [level.detections.flagged for level in result.levels] == [5, 5]  # each worker calibrated its own


@pytest.mark.slow
def test_a_sharded_ab_judges_the_head_by_the_base_s_declarations(project, tmp_path):
    # The head ships a wrong fused with a reference that agrees (tests/test_base_decides.py): each
    # GPU's worker must check it against the base's reference (declarations.judged_by_base).
    import shutil

    from tests.test_base_decides import _wrong_with_its_own_reference

    (project / "kernels" / "suites.yaml").write_text(SUITES)
    head = tmp_path / "head"
    shutil.copytree(project / "kernels", head / "kernels")
    subject_py = head / "kernels" / "subject.py"
    subject_py.write_text(_wrong_with_its_own_reference(subject_py.read_text()))
    subject = load_subject(project / "kernels")
    job = shards.Job({"base": project / "kernels", "head": head / "kernels"}, RunSettings(samples=10))
    measured = shards.measure_sharded(job, [subject.suites["tiny"]], TWO, setup=install_in_worker)
    assert {(f.kernel, f.reason) for f in measured["head"].failures} == {("fused", "wrong result")}
    assert not measured["base"].failures


SHARDED_SCRIPT = """
import signal
import sys
# Python turns SIGINT into KeyboardInterrupt only where it was not ignored when it started, and an
# ignored signal stays ignored in a child: a test runner started in the background of a shell
# (`pytest &`, nohup, some CI runners) passes SIG_IGN down. Here it is as in a terminal.
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {root!r})
from pathlib import Path
from perfbot.measuring import shards
from perfbot.measuring.planning import RunSettings
from perfbot.loading.package import load_subject
from tests.fake_gpu import install_in_worker
from tests.test_shards import TWO

if __name__ == "__main__":
    subject = load_subject(Path({kernels!r}))
    job = shards.Job({{"": subject.path}}, RunSettings(samples=10))
    try:
        shards.measure_sharded(job, [subject.suites["tiny"]], TWO, setup=install_in_worker)
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(0)
"""


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # ended, waiting to be reaped by whoever inherited it


@pytest.mark.slow
@pytest.mark.parametrize("group", [False, True], ids=["the driver alone", "the whole process group"])
def test_ctrl_c_stops_a_sharded_run_at_once_and_its_workers_with_it(project, tmp_path, group: bool):
    """Ctrl-C in a terminal reaches every process of the group; `kill -INT` the driver alone.
    Either way the workers, hung mid-sample, are gone and the driver ends with KeyboardInterrupt."""
    (project / "kernels" / "suites.yaml").write_text(SUITES)
    script = tmp_path / "sharded.py"
    script.write_text(SHARDED_SCRIPT.format(root=str(ROOT), kernels=str(project / "kernels")))
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**os.environ, "HANG_IN_WORKER": str(pids), "TRITON_INTERPRET": "1"}
    process = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.1)
        workers = [int(p.name) for p in pids.iterdir()]
        assert len(workers) == 2, "both workers hang in their first sample"
        if group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 130
        deadline = time.monotonic() + 10
        while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(_gone(pid) for pid in workers)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
