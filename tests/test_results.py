"""The results file: round trip, atomic writes, and clear errors for every malformed file."""

import json
from pathlib import Path

import pytest

from perfbot.errors import BadInput
from perfbot.records import results
from perfbot.records.run import Benchmark, Environment, Failure, Results, Settings


def sample_results() -> Results:
    bench = Benchmark(
        kernel="fused",
        shape={"M": 9, "K": 41, "N": 17},
        dtype="float16",
        samples_ms=[1.0, 1.2, 0.9],
        suite="s",
        case="c",
        flops=2 * 9 * 41 * 34,
        relative_error=1e-4,
        error_bound=2e-3,
        config={"BLOCK_M": 64},
    )
    failure = Failure(
        kernel="eager",
        shape={"M": 9, "K": 41, "N": 17},
        dtype="float16",
        reason="wrong result",
        relative_error=float("nan"),
        error_bound=2e-3,
    )
    return Results(
        environment=Environment(gpu_name="X"),
        settings=Settings(samples=3, sources={"k": {"kernels/k.py": "0" * 64, "/site/pkg/k.py": "f" * 64}}),
        benchmarks=[bench],
        failures=[failure],
        created="2026-11-30T00:00:00+00:00",
    )


def test_round_trip(tmp_path: Path):
    path = tmp_path / "r.json"
    results.save(sample_results(), path)
    loaded = results.load(path)
    assert loaded.benchmarks == sample_results().benchmarks
    assert loaded.failures[0].relative_error is None  # NaN is written as null
    assert loaded.benchmarks[0].median_ms == 1.0
    data = json.loads(path.read_text())
    assert data["format"] == 3 and loaded.environment == sample_results().environment
    assert loaded.settings == sample_results().settings  # the sources too
    assert set(data["benchmarks"][0]) >= {"kernel", "variant", "shape", "dtype", "samples_ms"}


def test_format_1_is_read_into_the_same_records(tmp_path: Path):
    """Format 1 wrote the variant into the kernel's name; it reads as a field of its own."""
    old = {
        "format": 1,
        "created": "2026-11-30T00:00:00+00:00",
        "environment": {"gpu_name": "NVIDIA H200", "gpu_state": {"before": None, "after": None}, "extra": 1},
        "settings": {"samples": 3, "ab_run": "r1"},
        "benchmarks": [
            {
                "kernel": "fused[tanh]",
                "approximate": "tanh",
                "shape": {"M": 1},
                "dtype": "bfloat16",
                "samples_ms": [1.0],
            },
            {"kernel": "fused", "approximate": "none", "shape": {"M": 1}, "dtype": "bfloat16", "samples_ms": [1.1]},
            {"kernel": "gemm", "approximate": "none", "shape": {"M": 1}, "dtype": "bfloat16", "samples_ms": [0.9]},
        ],
        "failures": [
            {
                "kernel": "eager[tanh]",
                "approximate": "tanh",
                "shape": {"M": 1},
                "dtype": "bfloat16",
                "reason": "wrong result",
            }
        ],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    loaded = results.load(path)
    assert [(b.kernel, b.variant, b.name) for b in loaded.benchmarks] == [
        ("fused", {"approximate": "tanh"}, "fused[approximate=tanh]"),
        ("fused", {}, "fused"),
        ("gemm", {}, "gemm"),
    ]
    assert (loaded.failures[0].kernel, loaded.failures[0].variant) == ("eager", {"approximate": "tanh"})
    assert loaded.environment.gpu_name == "NVIDIA H200" and loaded.settings.ab_run == "r1"
    results.save(loaded, tmp_path / "new.json")
    assert results.load(tmp_path / "new.json").benchmarks == loaded.benchmarks


def test_save_refuses_to_overwrite_and_leaves_no_temporary_file(tmp_path: Path):
    path = tmp_path / "r.json"
    path.write_text("old")
    with pytest.raises(BadInput, match="already exists"):
        results.save(sample_results(), path)
    assert path.read_text() == "old"
    results.save(sample_results(), path, overwrite=True)
    assert results.load(path).benchmarks
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.json"
    path.write_text(text)
    return path


def _valid() -> dict:
    return json.loads(json.dumps(sample_results().to_json()).replace("NaN", "null"))


def _with_samples(samples) -> str:
    data = _valid()
    data["benchmarks"][0]["samples_ms"] = samples
    return json.dumps(data)


def _duplicate() -> str:
    data = _valid()
    data["benchmarks"].append(dict(data["benchmarks"][0]))
    return json.dumps(data)


@pytest.mark.parametrize(
    "text,words",
    [
        ('{"format": 1, "benchmarks": [', "not valid JSON"),
        ('{"format": 99, "environment": {}, "benchmarks": []}', "format 99"),
        ('{"format": [], "environment": {}, "benchmarks": []}', "format []"),
        ('{"environment": {}, "benchmarks": []}', "format None"),
        ("[1, 2]", "the results file: should be a mapping (an object), got [1, 2]"),
        (_with_samples([1.0, float("nan")]), "samples_ms[1]: should be a finite number, got nan"),
        (_with_samples([1.0, -2.0]), "-2.0"),
        (_with_samples([]), "samples_ms: List should have at least 1 item"),
        (_with_samples(["1.0"]), "'1.0'"),
        (_duplicate(), "repeats benchmarks[0]"),
        (
            '{"format": 1, "environment": {}, "benchmarks": [{"kernel": "k", "shape": {"M": "x"}, "dtype": "f", '
            '"samples_ms": [1]}]}',
            "shape.M: should be a valid integer, got 'x'",
        ),
    ],
)
def test_malformed_files_are_bad_input(tmp_path: Path, text: str, words: str):
    with pytest.raises(BadInput) as error:
        results.load(_write(tmp_path, text))
    assert words in str(error.value)
    assert "bad.json" in str(error.value)


def test_missing_file_and_directory(tmp_path: Path):
    with pytest.raises(BadInput, match="no such file"):
        results.load(tmp_path / "nope.json")
    with pytest.raises(BadInput, match="is a directory"):
        results.load(tmp_path)
    with pytest.raises(BadInput, match="is a directory"):
        results.save(sample_results(), tmp_path)


def test_every_committed_results_file_still_loads():
    """The measurements kept in the repository are results files of the formats perfbot reads."""
    import subprocess

    from tests.conftest import ROOT

    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "*.json"], capture_output=True, text=True, check=True
    ).stdout.split()
    # What is checked out: the tests pass without the dated experiments (tests/test_fixtures.py).
    present = [ROOT / name for name in listed if (ROOT / name).is_file()]
    found = [path for path in present if '"samples_ms"' in path.read_text(errors="replace")]
    found = [path for path in found if '"comparisons"' not in path.read_text()]  # comparison files, not runs
    # A probe's own output may keep samples too; a run's file is the one with benchmarks in it.
    found = [path for path in found if isinstance(run := json.loads(path.read_text()), dict) and "benchmarks" in run]
    # The H200 runs copied into tests/fixtures are runs, and the filters above keep every one.
    copies = {path for path in (ROOT / "tests" / "fixtures").rglob("*.json") if path.name != "noise.json"}
    assert len(copies) >= 14 and copies <= set(found)
    for path in found:
        measured = results.load(path)
        assert measured.benchmarks, path
        # format 1 named a variant in the kernel's name: read, it is a parameter of its own
        assert all("[" not in b.kernel for b in measured.benchmarks), path
