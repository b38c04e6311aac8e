"""`perfbot bisect` says what changed in the compiled code from the last good commit to the first
bad one: on generated histories (tests/test_bisect.py) whose measure command hands back each
commit's compiled kernels as `perfbot sample` does (jobs/bisect_probers.py), records of this
repository's kernel as Triton compiled it (tests/compiled_records.py)."""

import json
from dataclasses import asdict, replace
from pathlib import Path

from perfbot.deciding.compiled_change import CompiledChange, Difference
from perfbot.jobs import bisect_outcome
from perfbot.jobs.bisect_probers import COMPILED_ENV, HandedBack, hand_back, handed_back
from perfbot.records.autotune import AutotunePick
from perfbot.records.compiled import Compiled
from tests import compiled_records as records
from tests.test_bisect import history, log, run_bisect  # noqa: F401 (log: the autouse fixture its commands need)

BLOCK_K_128 = json.dumps(asdict(records.compiled(records.DECODE_BLOCK_K_128)))
BLOCK_K_64 = json.dumps(asdict(records.compiled(records.DECODE_BLOCK_K_64)))
PICK = AutotunePick(
    kernel="_k", source_sha256="a" * 64, configs_sha256="b" * 64, key=["4096"], config={"BLOCK": 64}, origin="tuned"
)


def _bisected(tmp_path: Path, speeds: list[float], compiled: list[str] | None):
    repo, shas = history(tmp_path, speeds, compiled=compiled)
    report, outcome = tmp_path / "bisect.md", tmp_path / "outcome.json"
    result = run_bisect(repo, shas[0], shas[-1], tmp_path, "--out-markdown", str(report), "--out-json", str(outcome))
    assert result.exit_code == 0, result.output
    return shas, result.output, report.read_text(), bisect_outcome.load(outcome)


def test_the_report_compares_the_first_bad_commits_kernels_with_the_last_good_ones(tmp_path: Path):
    speeds = [1.0] * 11 + [1.05] * 5  # commit 11 retiles: BLOCK_K 128 -> 64
    shas, printed, report, outcome = _bisected(tmp_path, speeds, [BLOCK_K_128] * 11 + [BLOCK_K_64] * 5)
    assert f"first bad commit: {shas[11]}" in printed
    assert (outcome.last_good, outcome.earliest_bad, outcome.first_bad) == (shas[10], shas[11], shas[11])
    change = outcome.compiled_change
    assert change is not None and not change.same_machine_code
    assert change.kernels[0].differences[:2] == [
        Difference("registers", 62, 45),
        Difference("shared memory (B)", 42032, 21552),
    ]
    assert Difference("BLOCK_K", 128, 64) in change.kernels[0].differences
    title = f"from the last good commit {shas[10][:12]} to the first bad one {shas[11][:12]}"
    assert f"**What changed in the compiled code** {title}:" in report
    assert "| kernel | what | last good | first bad |" in report
    assert "| \\_geglu\\_tma\\_kernel | registers | 62 | 45 |" in report
    assert "|  | BLOCK\\_K | 128 | 64 |" in report and "|  | mma instructions | 16 | 8 |" in report
    assert report.index("| commit | subject |") < report.index("What changed in the compiled code")
    assert f"what changed in the compiled code {title}" in printed  # the terminal's table
    state = json.loads((tmp_path / "state.json").read_text())  # a resumed bisect has them too
    assert state["probes"][shas[11]]["compiled"]["kernels"][0]["registers"] == 45
    assert state["probes"][shas[10]]["compiled"]["kernels"][0]["registers"] == 62


def test_a_slowdown_with_the_same_machine_code_says_so(tmp_path: Path):
    _, _, report, outcome = _bisected(tmp_path, [1.0] * 6 + [1.05] * 2, [BLOCK_K_64] * 8)
    assert outcome.compiled_change == CompiledChange(same_machine_code=True)
    assert "Same machine code: the change is outside this kernel (launch, inputs, neighbours)." in report


def test_a_record_the_bisect_cannot_read_is_said_and_blames_nothing(tmp_path: Path):
    shas, _, report, outcome = _bisected(tmp_path, [1.0] * 6 + [1.05] * 2, [BLOCK_K_128] * 6 + ["{not json"] * 2)
    assert outcome.first_bad == shas[6]
    change = outcome.compiled_change
    assert change is not None and change.unknown is not None
    assert change.unknown.startswith("the bad commit's kernels could not be recorded: the measure command's record")
    assert "Not known: the bad commit's kernels could not be recorded" in report


def test_a_measure_command_that_hands_back_nothing_gets_no_section(tmp_path: Path):
    shas, printed, report, outcome = _bisected(tmp_path, [1.0] * 6 + [1.05] * 2, None)
    assert outcome.first_bad == shas[6] and outcome.last_good == shas[5]
    assert outcome.compiled_change is None
    assert "compiled code" not in report and "compiled code" not in printed


def test_hand_back_writes_the_record_without_its_sass_and_only_inside_a_bisect(tmp_path: Path, monkeypatch):
    kept = records.compiled(replace(records.DECODE_BLOCK_K_64, sass="x" * 100_000))
    monkeypatch.delenv(COMPILED_ENV, raising=False)
    hand_back(kept)  # outside a bisect: nowhere to write, nothing written
    path = tmp_path / "compiled.json"
    monkeypatch.setenv(COMPILED_ENV, str(path))
    hand_back(None)
    assert not path.exists() and handed_back(path) == HandedBack()
    hand_back(kept, [PICK])
    assert handed_back(path) == HandedBack(records.compiled(records.DECODE_BLOCK_K_64), [PICK])  # sass left out
    assert path.stat().st_size < 10_000
    path.write_text(BLOCK_K_64)  # what a perfbot before the picks hands back: the compiled record alone
    assert handed_back(path) == HandedBack(records.compiled(records.DECODE_BLOCK_K_64))
    path.write_text(json.dumps({"kernels": "many"}))  # not a record: said, not raised
    unread = handed_back(path).compiled
    assert isinstance(unread, Compiled) and unread.kernels == []
    assert unread.unrecorded is not None and unread.unrecorded.startswith("the measure command's record cannot be read")


def _handing_back(block: int) -> str:
    return json.dumps(asdict(HandedBack(None, [replace(PICK, config={"BLOCK": block, "num_warps": 4})])))


def test_each_probe_records_its_autotune_pick_and_the_report_names_the_change(tmp_path: Path):
    speeds = [1.0] * 11 + [1.05] * 5  # commit 11: the autotuner picks another block
    shas, printed, report, outcome = _bisected(tmp_path, speeds, [_handing_back(64)] * 11 + [_handing_back(128)] * 5)
    assert outcome.first_bad == shas[11]
    said = "_k (key 4096): the last good commit ran BLOCK=64, num_warps=4, the bad commit BLOCK=128, num_warps=4"
    assert outcome.picks_change is not None and outcome.picks_change.startswith(said)
    measured = [p for p in outcome.probes if p.samples]
    assert all(p.autotune in ("_k: BLOCK=64, num_warps=4", "_k: BLOCK=128, num_warps=4") for p in measured)
    assert "| autotune config |" in report and "**The autotuner's picks** from the last good commit" in report
    assert "\\_k: BLOCK=128, num\\_warps=4 |" in report
    assert "the autotuner's picks from the last good commit" in " ".join(printed.split())  # the terminal's
    state = json.loads((tmp_path / "state.json").read_text())  # a resumed bisect has them too
    assert state["probes"][shas[11]]["autotune"][0]["config"]["BLOCK"] == 128
