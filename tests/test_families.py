"""Several kernels in one repository: a package's `subjects`, each a kernel family, combined into
one subject (perfbot/loading/families.py), and chosen by name on the command line
(perfbot/loading/selection.py). The packages here are real files, loaded by path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.errors import BadInput
from perfbot.loading import declarations
from perfbot.loading.families import Families
from perfbot.loading.package import load_subject
from perfbot.loading.selection import BadChoice, chosen, chosen_implementations, one_benchmark
from perfbot.measuring.checking import check
from perfbot.measuring.planning import RunSettings

# A family: its own inputs (a count of tensors the other family does not take), reference and
# tolerance, a suites file beside its module. `SHIFT` makes a wrong implementation, `TOLERANCE`
# the family's bound.
FAMILY = """\
import torch
from perfbot import Subject

SEEN = []


def make_inputs(case, generator):
    SEEN.append(case)
    return tuple(torch.randn(case.rows, case.cols, generator=generator, device=generator.device) for _ in range({n}))


def reference(*inputs):
    return sum(x.double() for x in inputs) * {scale}


subject = Subject(name="{name}", inputs=make_inputs, reference=reference, tolerance={{"float32": {tolerance}}},
                  variants={variants}, default_case=("quick", "one"), bytes=lambda case: 4 * case.rows)


@subject.implementation("torch", under_test=True)
def summed(*inputs, **variant):
    return sum(inputs) * {scale} * (1 + {shift})


@subject.implementation("copy", bound=True, variants=())
def copy(*inputs):
    return sum(inputs) * {scale}
"""
SUITES = """\
quick:
  dtype: float32
  cases:
    - {name: one, rows: 4, cols: 8}
pr:
  dtype: float32
  cases:
    - {name: same, rows: 16, cols: 16}
"""


def _family(
    top: Path,
    name: str,
    n: int = 1,
    scale: float = 1.0,
    shift: float = 0.0,
    tolerance: float = 1e-5,
    variants: str = "{}",
) -> None:
    folder = top / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        FAMILY.format(name=name, n=n, scale=scale, shift=shift, tolerance=tolerance, variants=variants)
    )
    (folder / "suites.yaml").write_text(SUITES)


def _package(tmp_path: Path, families: list[str], **text: str) -> Path:
    top = tmp_path / "perf"
    top.mkdir(exist_ok=True)
    imports = "".join(f"from .{name} import subject as {name}\n" for name in families)
    (top / "__init__.py").write_text(imports + f"\nsubjects = [{', '.join(families)}]\n")
    return top


@pytest.fixture
def two(tmp_path: Path) -> Path:
    """geglu-like and rmsnorm-like: two tensors and one, each family's own scale and tolerance."""
    top = tmp_path / "perf"
    _family(top, "pair", n=2, scale=0.5, tolerance=1e-5)
    _family(top, "norm", n=1, scale=2.0, tolerance=1e-3)
    return _package(tmp_path, ["pair", "norm"])


def test_names_are_prefixed_with_the_family_and_each_carries_its_familys_parts(two: Path):
    loaded = load_subject(two)
    assert loaded.families == ("pair", "norm")
    assert loaded.subject.name == "pair+norm"
    assert list(loaded.implementations) == ["pair/torch", "pair/copy", "norm/torch", "norm/copy"]
    assert list(loaded.suites) == ["pair/quick", "pair/pr", "norm/quick", "norm/pr"]
    assert loaded.suites["norm/pr"].implementations == ("norm/torch", "norm/copy")
    assert {case.suite for case in loaded.suites["norm/pr"].cases} == {"norm/pr"}
    pair, norm = loaded.implementations["pair/torch"], loaded.implementations["norm/torch"]
    assert pair.reference is not norm.reference and pair.bytes is not None
    assert loaded.implementations["norm/copy"].bytes is None  # a bound counts only its own
    assert loaded.subject.default_case == ("pair/quick", "one")
    assert loaded.case(None, None).suite == "pair/quick"


def test_inputs_go_to_the_cases_family_as_it_declared_the_case(two: Path):
    loaded = load_subject(two)
    generator = torch.Generator().manual_seed(0)
    case = loaded.suites["norm/quick"].cases[0]
    assert len(loaded.subject.inputs(case, generator)) == 1
    assert len(loaded.subject.inputs(loaded.suites["pair/quick"].cases[0], generator)) == 2
    assert isinstance(loaded.subject, Families)
    (given,) = loaded.subject.families["norm"].inputs.__globals__["SEEN"]
    assert (given.suite, given.name, given.rows) == ("quick", "one", 4)  # unprefixed: as the family declared it


def test_each_case_is_checked_within_its_familys_tolerance(tmp_path: Path):
    top = tmp_path / "perf"
    _family(top, "pair", n=2, tolerance=1e-5, shift=1e-4)  # off by 1e-4: wrong within 1e-5
    _family(top, "norm", n=1, tolerance=1e-3, shift=1e-4)  # right within 1e-3
    loaded = load_subject(_package(tmp_path, ["pair", "norm"]))
    suites = chosen(loaded, ("quick",), ())
    checked = check(loaded, suites, RunSettings(kernels=("pair/torch", "norm/torch")), "cpu")
    assert {(c.name, c.right, c.bound) for c in checked} == {("pair/torch", False, 1e-5), ("norm/torch", True, 1e-3)}


def test_identical_cases_of_two_families_stay_two_cases(two: Path):
    loaded = load_subject(two)
    suites = chosen(loaded, ("pr",), ())
    assert [(s.name, [c.name for c in s.cases]) for s in suites] == [("pair/pr", ["same"]), ("norm/pr", ["same"])]


def test_a_familys_suites_file_is_read_beside_its_own_module(tmp_path: Path):
    top = tmp_path / "perf"
    _family(top, "pair")
    _family(top / "deeper", "norm")  # not beside the package's __init__.py
    (top / "deeper" / "__init__.py").write_text("")
    (top / "__init__.py").write_text(
        "from .pair import subject as pair\nfrom .deeper.norm import subject as norm\nsubjects = [pair, norm]\n"
    )
    assert "norm/pr" in load_subject(top).suites


def test_names_stay_the_same_with_one_family_and_when_one_is_chosen(tmp_path: Path, two: Path):
    alone = tmp_path / "alone"
    _family(alone / "perf", "norm")
    loaded = load_subject(_package(alone, ["norm"]))
    assert list(loaded.suites) == ["norm/quick", "norm/pr"] and "norm/torch" in loaded.implementations
    both = load_subject(two)
    picked = chosen(both, (), (), family_names=("norm",))
    assert [s.name for s in picked] == ["norm/pr"]
    assert [s.name for s in chosen(both, ("quick",), (), family_names=("norm",))] == ["norm/quick"]
    assert [s.name for s in chosen(both, ("pair/quick", "norm/pr"), ())] == ["pair/quick", "norm/pr"]
    assert [s.name for s in chosen(both, ("all",), (), family_names=("pair",))] == ["pair/quick", "pair/pr"]
    assert chosen_implementations(both, ("torch",)) == ("pair/torch", "norm/torch")
    assert chosen_implementations(both, ("norm/copy",)) == ("norm/copy",)
    case, kernel = one_benchmark(both, "norm", "pr", None, "copy")
    assert (case.suite, case.name, kernel) == ("norm/pr", "same", "norm/copy")
    case, kernel = one_benchmark(both, None, "norm/quick", None, None)
    assert kernel == "norm/torch"


@pytest.mark.parametrize(
    "families,suites,words",
    [
        (("other",), (), "unknown family 'other'; known: pair, norm"),
        (("norm",), ("pair/pr",), "suite 'pair/pr': family 'pair' is not chosen"),
        ((), ("nightly",), "no chosen family has a suite 'nightly'"),
        ((), ("x/pr",), "suite 'x/pr': no family 'x'"),
    ],
)
def test_a_family_or_suite_of_none_is_refused_naming_the_known(two: Path, families, suites, words):
    with pytest.raises(BadChoice, match=words.replace("(", r"\(")) as refused:
        chosen(load_subject(two), suites, (), family_names=families)
    # The library names the option that took the name, for the command line to say its way.
    assert refused.value.option == ("--family" if words.startswith("unknown family") else "--suite")
    assert str(refused.value) == f"{refused.value.option}: {refused.value.reason}"


def test_a_family_named_for_a_package_of_one_subject_is_refused():
    from tests.conftest import ROOT

    with pytest.raises(BadChoice, match=r"^--family: subject 'rmsnorm' has no kernel families"):
        chosen(load_subject(ROOT / "examples" / "rmsnorm" / "rmsnorm"), (), (), family_names=("rmsnorm",))


def test_a_benchmark_without_an_implementation_to_time_is_refused_saying_which_option_fixes_it(tmp_path: Path):
    from perfbot.loading.selection import known_implementations

    top = tmp_path / "perf"
    _family(top, "pair")
    _family(top, "norm")
    (top / "norm" / "__init__.py").write_text(
        (top / "norm" / "__init__.py").read_text().replace("under_test=True", "under_test=False")
    )
    both = load_subject(_package(tmp_path, ["pair", "norm"]))
    with pytest.raises(BadChoice, match=r"^subject 'pair\+norm' marks no implementation under_test in family 'norm'; "):
        one_benchmark(both, "norm", None, None, None)
    assert one_benchmark(both, "norm", None, None, "copy")[1] == "norm/copy"  # named: no need of one
    with pytest.raises(BadChoice, match=r"^--skip-kernel: unknown implementation 'nope'; known: pair/torch, "):
        known_implementations(both, ("pair/torch", "nope"), "--skip-kernel")
    known_implementations(both, ("pair/torch", "norm/copy"), "--kernel")


def test_two_families_declaring_one_variant_differently_are_refused(tmp_path: Path):
    top = tmp_path / "perf"
    _family(top, "pair", variants='{"mode": ("a", "b")}')
    _family(top, "norm", variants='{"mode": ("a", "c")}')
    with pytest.raises(BadInput, match=r"families 'pair' and 'norm' both declare variant 'mode'"):
        load_subject(_package(tmp_path, ["pair", "norm"]))


def test_the_same_variant_in_two_families_is_one_parameter(tmp_path: Path):
    top = tmp_path / "perf"
    _family(top, "pair", variants='{"mode": ("a", "b")}')
    _family(top, "norm", variants='{"mode": ("a", "b")}')
    loaded = load_subject(_package(tmp_path, ["pair", "norm"]))
    assert dict(loaded.subject.variants) == {"mode": ("a", "b")}
    assert loaded.implementations["norm/torch"].variants == ("mode",)


@pytest.mark.parametrize(
    "text,words",
    [
        ("from .pair import subject as pair\nsubjects = [pair, pair]\n", "two families are named 'pair'"),
        ("subjects = []\n", "subjects must be a non-empty list"),
        ("from .pair import subject\nsubjects = [subject]\n", "defines both `subject` and `subjects`"),
    ],
)
def test_a_list_of_families_that_cannot_be_combined_is_refused(tmp_path: Path, text: str, words: str):
    top = tmp_path / "perf"
    _family(top, "pair")
    (top / "__init__.py").write_text(text)
    with pytest.raises(BadInput, match=words):
        load_subject(top)


def test_the_cli_lists_the_suites_per_family_and_refuses_an_unknown_one_in_a_line(two: Path, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.perfbot]\nkernels = "perf"\ntriton-commit = "' + 40 * "0" + '"\n')
    listed = CliRunner().invoke(perfbot, ["suites", "--project", str(tmp_path)])
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert (
        lines[0] == "family pair: pair/torch (under test), pair/copy"
        and "family norm: norm/torch (under test), norm/copy" in lines
    )
    refused = CliRunner().invoke(perfbot, ["check", "--project", str(tmp_path), "--family", "other"])
    assert refused.exit_code == 2
    assert refused.stderr.splitlines()[-1] == (  # the library's refusal, said as click says a bad argument
        "perfbot: error: Invalid value for --family: unknown family 'other'; known: pair, norm; "
        "see perfbot check --help"
    )


def test_an_ab_lists_a_change_to_one_familys_inputs_reference_or_tolerance(tmp_path: Path):
    # The combined subject's own inputs and reference only route: each family's are compared.
    sides = {}
    for side, (n, scale, tolerance) in {"base": (1, 2.0, 1e-3), "head": (2, 3.0, 1e-2)}.items():
        top = tmp_path / side / "perf"
        _family(top, "pair", n=2, scale=0.5)
        _family(top, "norm", n=n, scale=scale, tolerance=tolerance)
        sides[side] = load_subject(_package(tmp_path / side, ["pair", "norm"]), side)
    lines = declarations.differences(sides["base"], sides["head"], list(sides["base"].suites.values()))
    changed = {line.split(":")[0] for line in lines}
    assert {"subject family norm inputs", "subject family norm reference", "subject family norm tolerance"} <= changed
    assert not any("family pair" in line for line in lines)


def test_an_ab_lists_a_family_only_one_side_has(tmp_path: Path):
    sides = {}
    for side, names in {"base": ["pair", "norm"], "head": ["pair"]}.items():
        top = tmp_path / side / "perf"
        for name in names:
            _family(top, name)
        sides[side] = load_subject(_package(tmp_path / side, names), side)
    lines = declarations.differences(sides["base"], sides["head"], [])
    assert "subject family norm: present on the base, absent on the head" in lines


def test_a_familys_raising_reference_is_called_the_reference_and_one_of_its_own_is_called_so(tmp_path: Path):
    top = tmp_path / "perf"
    _family(top, "pair")
    _family(top, "norm")
    module = top / "norm" / "__init__.py"
    text = module.read_text().replace(
        "    return sum(x.double()", "    raise ValueError('no')\n    return sum(x.double()"
    )
    own = "\n\n@subject.implementation('other', reference=lambda *inputs: 1 / 0)\ndef other(*x):\n    return x[0]\n"
    module.write_text(text + own)
    loaded = load_subject(_package(tmp_path, ["pair", "norm"]))
    said = {
        "norm/torch": "the reference (case norm/quick/one) raised",  # the family's
        "norm/other": "norm/other's own reference (case norm/quick/one) raised",
    }
    for kernel, words in said.items():
        with pytest.raises(BadInput) as raised:
            check(loaded, chosen(loaded, ("quick",), (), family_names=("norm",)), RunSettings(kernels=(kernel,)), "cpu")
        assert words in str(raised.value), str(raised.value)


def test_check_of_one_family_is_headed_by_that_family(two: Path, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text('[tool.perfbot]\nkernels = "perf"\ntriton-commit = "' + 40 * "0" + '"\n')
    result = CliRunner().invoke(perfbot, ["check", "--project", str(tmp_path), "--family", "norm", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert "perfbot check: norm on cpu" in result.output and "pair+norm" not in result.output
    both = CliRunner().invoke(perfbot, ["check", "--project", str(tmp_path), "--device", "cpu"])
    assert both.exit_code == 0 and "perfbot check: pair+norm on cpu" in both.output, both.output


def test_a_run_records_what_it_was_cut_down_to_by_name(two: Path, tmp_path: Path, gpu):
    (tmp_path / "pyproject.toml").write_text('[tool.perfbot]\nkernels = "perf"\ntriton-commit = "' + 40 * "0" + '"\n')
    out = tmp_path / "run.json"
    arguments = ["run", "--project", str(tmp_path), "--suite", "quick", "--case", "one", "--kernel", "torch"]
    result = CliRunner().invoke(perfbot, [*arguments, "--samples", "10", "--out", str(out)])
    assert result.exit_code == 0, result.output
    settings = json.loads(out.read_text())["settings"]
    assert settings["chosen_cases"] == ["one"]
    assert settings["chosen_kernels"] == ["pair/torch", "norm/torch"] and settings["chosen_variants"] == {}


def test_sample_times_one_benchmark_of_a_family_named_as_selftest_names_it(two: Path, tmp_path: Path, gpu):
    (tmp_path / "pyproject.toml").write_text('[tool.perfbot]\nkernels = "perf"\ntriton-commit = "' + 40 * "0" + '"\n')
    sample = ["sample", "--project", str(tmp_path), "--samples", "10"]
    done = CliRunner().invoke(perfbot, [*sample, "--family", "norm", "--suite", "pr", "--kernel", "copy"])
    assert done.exit_code == 0, done.output
    assert len(done.stdout.splitlines()) == 10 and all(float(line) > 0 for line in done.stdout.splitlines())
    # A bare name is the case's family's; without --kernel, the family's own implementation.
    assert CliRunner().invoke(perfbot, [*sample, "--suite", "norm/pr", "--kernel", "copy"]).exit_code == 0
    assert CliRunner().invoke(perfbot, [*sample, "--family", "pair"]).exit_code == 0
    refused = CliRunner().invoke(perfbot, [*sample, "--family", "other"])
    assert refused.exit_code == 2
    assert refused.stderr.splitlines()[-1].startswith("perfbot: error: Invalid value for --family: unknown family")
