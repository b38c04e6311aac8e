"""The subject API (perfbot.Subject) and the subject of this repository (kernels/)."""

from __future__ import annotations

import sys
import textwrap
import types
from pathlib import Path

import pytest

from perfbot import Case, Subject, Suite
from perfbot.errors import BadInput
from perfbot.loading.package import load_subject
from perfbot.loading.suites import load_suites
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def geglu():
    return load_subject(ROOT / "kernels")


def test_this_repositorys_subject(geglu):
    implementations = geglu.implementations
    assert set(implementations) == {
        *("fused", "fused-pointer", "fused-epilogue", "fused-launch"),
        *("eager", "compiled", "max-autotune", "gemm", "copy"),
    }
    under_test = [n for n, i in implementations.items() if i.under_test]
    assert under_test == ["fused", "fused-pointer", "fused-epilogue", "fused-launch"]
    assert [n for n, i in implementations.items() if i.bound] == ["gemm", "copy"]
    assert geglu.subject.takes(implementations["gemm"]) == ()
    assert geglu.subject.takes(implementations["eager"]) == ("approximate",)
    assert geglu.subject.defaults() == {"approximate": "none"}


def test_a100_suite_is_the_seed_sweep(geglu):
    suite = geglu.suites["a100"]
    assert [(c.M, c.K, c.N, c.dtype) for c in suite.cases] == [
        (d, d, 4 * d, "float16") for d in (512, 1024, 2048, 4096)
    ]


def test_models_suite(geglu):
    cases = {(c.K, c.N) for c in geglu.suites["models"].cases}
    assert cases == {
        (2048, 16384),
        (3072, 24576),
        (2560, 10240),
        (3840, 15360),
        (5376, 21504),
        (2048, 5120),
        (4096, 10240),
    }
    assert {(c.M, c.dtype) for c in geglu.suites["models"].cases} == {(8192, "bfloat16")}


def test_decode_suite(geglu):
    cases = {(c.M, c.K, c.N, c.dtype) for c in geglu.suites["decode"].cases}
    assert cases == {(m, k, n, "bfloat16") for m in (1, 16, 64) for k, n in ((3072, 24576), (5376, 21504))}


def test_the_quick_suite_fits_the_interpreter(geglu):
    quick = geglu.suites["quick"]
    assert {c.dtype for c in quick.cases} <= {"float16", "float32"}  # the interpreter's bf16 dot is wrong
    assert max(c.M * c.K * c.N for c in quick.cases) < 1e6
    assert {"fused", "fused-pointer"} <= set(quick.implementations)


def test_counts_of_work(geglu):
    case = geglu.case("pr", "t5-v1.1-xl")
    gemm, copy = geglu.implementations["gemm"], geglu.implementations["copy"]
    assert geglu.subject.flops(case) == 2 * 8192 * 2048 * 2 * 5120
    assert geglu.subject.bytes(case) == 2 * (8192 * 2048 + 2 * 5120 * 2048 + 8192 * 5120)
    assert gemm.bytes(case) == 2 * (8192 * 2048 + 2 * 5120 * 2048 + 2 * 8192 * 5120)
    assert (copy.flops, copy.bytes(case)) == (None, 2 * 2 * 2 * 5120 * 2048)  # a bound: its own counts only
    assert gemm.flops(case) == geglu.subject.flops(case)


def test_the_default_case_and_case_lookup(geglu):
    assert geglu.case(None, None).name == "t5-v1.1-xl"
    assert geglu.case("a100", None).name == "d512"
    with pytest.raises(BadInput, match="unknown suite 'nope'"):
        geglu.case("nope", None)
    with pytest.raises(BadInput, match="suite pr has no case 'x'"):
        geglu.case("pr", "x")


def test_two_checkouts_load_side_by_side(project: Path, geglu):
    other = load_subject(project / "kernels")
    assert other.subject is not geglu.subject
    assert other.implementations["fused"].fn is not geglu.implementations["fused"].fn


@pytest.mark.slow
def test_compiled_baselines_never_fall_back_to_eager_past_dynamos_recompile_limit(geglu):
    """Twelve variants of one function (more than dynamo's default limit of 8) stay compiled once
    an implementation built on torch.compile exists; the default would run the 9th eagerly."""
    import torch
    from torch._dynamo.utils import counters

    compiled = geglu.implementations["compiled"].fn
    # Builds the compiled function, which sets dynamo's limits; calling it would add a CPU
    # compile of the whole GeGLU (20-35 s on CI's machine) that the assertions below do not need.
    sys.modules[compiled.__module__]._compiled_eager()
    torch._dynamo.reset()
    counters.clear()

    def variant(x, scale: float):
        return x * scale

    compiled_variant = torch.compile(variant, backend="eager", dynamic=False)
    for n in range(12):
        compiled_variant(torch.ones(n + 1), float(n))
    assert counters["frames"]["ok"] == 12
    assert torch._dynamo.config.fail_on_recompile_limit_hit


# --- the API, on a subject made here -------------------------------------------------------


def _toy(**options) -> Subject:
    subject = Subject(
        name="toy",
        inputs=lambda case, generator: (),
        reference=lambda: 0,
        tolerance={"float32": 1e-5, "float16": 2e-3},
        variants={"mode": ("a", "b")},
        **options,
    )

    @subject.implementation("mine", under_test=True)
    def mine(mode: str = "a"):
        return 0

    @subject.implementation("theirs", variants=())
    def theirs():
        return 0

    return subject


def test_case_parameters_read_as_attributes():
    case = Case("s", "c", {"M": 3, "rows": 7}, "float32")
    assert (case.M, case.rows, case.shape) == (3, 7, {"M": 3, "rows": 7})
    with pytest.raises(AttributeError, match="case 'c' has no parameter 'K'"):
        _ = case.K


def test_registration_refuses_twice_and_unknown_variants():
    subject = _toy()
    with pytest.raises(ValueError, match="'mine' is registered twice"):
        subject.implementation("mine")(lambda: 0)
    with pytest.raises(ValueError, match="takes variant 'colour', which the subject does not declare"):
        subject.implementation("other", variants=("colour",))(lambda: 0)


def test_suites_given_in_code_skip_the_file(tmp_path: Path):
    case = Case("only", "one", {"n": 4}, "float32")
    package = _package(tmp_path, "{'only': Suite('only', '', ('mine',), (CASE,))}")
    loaded = load_subject(package)
    assert loaded.suites["only"].cases[0] == case


def _package(tmp_path: Path, suites: str = "'suites.yaml'", body: str = "") -> Path:
    package = tmp_path / "toy"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text(
        textwrap.dedent(
            f"""
            from perfbot import Case, Subject, Suite
            CASE = Case("only", "one", {{"n": 4}}, "float32")
            subject = Subject(name="toy", inputs=lambda case, g: (), reference=lambda: 0,
                              tolerance={{"float32": 1e-5}}, suites={suites})
            subject.implementation("mine", under_test=True)(lambda: 0)
            """
        )
        + body
    )
    return package


@pytest.mark.parametrize(
    "init,words",
    [
        (None, "not a Python package (no __init__.py)"),
        ("x = 1\n", "the package defines no `subject` (a perfbot.Subject)"),
        ("raise RuntimeError('no GPU library\\nsecond line')\n", "does not import: RuntimeError: no GPU library"),
        ("import not_a_module_anywhere\n", "does not import: No module named 'not_a_module_anywhere'"),
        (
            "from perfbot import Subject\nsubject = Subject('s', lambda c, g: (), lambda: 0, {'float32': 1})\n",
            "subject 's' has no implementations",
        ),
    ],
)
def test_a_package_that_is_not_a_subject_is_bad_input(tmp_path: Path, init: str | None, words: str):
    package = tmp_path / "pkg"
    package.mkdir()
    if init is not None:
        (package / "__init__.py").write_text(init)
    with pytest.raises(BadInput) as error:
        load_subject(package)
    assert words in str(error.value)
    assert "\n" not in str(error.value)


def test_a_suites_file_of_the_api(tmp_path: Path):
    path = tmp_path / "suites.yaml"
    path.write_text(
        "quick:\n  about: small\n  dtype: float32\n  cases:\n"
        "    - {name: a, M: 3, N: 5}\n"
        "    - {name: b, M: 1, N: 2, dtype: float16}\n"
    )
    suites = load_suites(path, _toy())
    assert suites == {
        "quick": Suite(
            "quick",
            "small",
            ("mine", "theirs"),  # no list: every implementation
            (Case("quick", "a", {"M": 3, "N": 5}, "float32"), Case("quick", "b", {"M": 1, "N": 2}, "float16")),
        )
    }


@pytest.mark.parametrize(
    "text,words",
    [
        ("pr: [1, 2]", "pr: should be a mapping (an object), got [1, 2]"),
        ("pr:\n  cases: []\n", "pr.cases: List should have at least 1 item"),
        ("pr:\n  colour: red\n  cases: [{name: a, M: 1, dtype: float16}]\n", "pr.colour: unknown key"),
        ("pr:\n  cases: [{name: a, M: 1, dtype: float64}]\n", "dtype must be one the subject has a tolerance for"),
        ("pr:\n  dtype: float16\n  cases: [{name: a, M: 1, K: 1.5}]\n", "1 to 16 integers from 1 to 2^40, got K=1.5"),
        ("pr:\n  dtype: float16\n  cases: [{name: a, M: -1}]\n", "1 to 16 integers from 1 to 2^40, got M=-1"),
        ("pr:\n  dtype: float16\n  cases: [{name: a, M: 2199023255553}]\n", "got M=2199023255553"),
        ("pr:\n  dtype: float16\n  cases: [{name: a, M: [1]}]\n", "pr.cases[0].M: should be"),
        (
            "pr:\n  dtype: float16\n  cases: [{name: a, M: '1'}]\n",
            "parameters must be 1 to 16 integers from 1 to 2^40, got M='1'",
        ),
        ("pr:\n  dtype: float16\n  cases: [{name: a}]\n", "1 to 16 integers from 1 to 2^40, got 0"),
        (
            "pr:\n  dtype: float16\n  implementations: [cutlass]\n  cases: [{name: a, M: 1}]\n",
            "unknown implementation 'cutlass'",
        ),
        ("pr:\n  dtype: float16\n  cases: [{name: a, M: 1}, {name: a, M: 2}]\n", "appears twice"),
        ("pr: {cases: [{M: 1, dtype: float16}]}\n", "cases[0]: needs a name"),
        ("{{{", "cannot read"),
    ],
)
def test_bad_suites_are_bad_input(tmp_path: Path, text: str, words: str):
    path = tmp_path / "suites.yaml"
    path.write_text(text)
    with pytest.raises(BadInput) as error:
        load_suites(path, _toy())
    assert words in str(error.value)
    assert "\n" not in str(error.value)


# --- mistakes in a subject are refused in one line (exit 2), never mid-run or as a traceback ---


def _write(tmp_path: Path, body: str, name: str = "pkg") -> Path:
    package = tmp_path / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(body))
    return package


HEADER = """
from perfbot import Case, Subject, Suite
import torch
CASES = (Case("s", "c", {"n": 8}, "float32"),)
"""


@pytest.mark.parametrize(
    "declaration,words",
    [
        ("tolerance={'float32': 'x'}", "tolerance['float32'] must be a number, got 'x'"),
        ("tolerance={'float32': float('nan')}", "must be a finite number of at least 0"),
        ("tolerance={}", "tolerance must map each dtype"),
        ("tolerance={'float32': 1e-5}, variants={'mode': ()}", "variants['mode'] must list its values as strings"),
        ("tolerance={'float32': 1e-5}, variants={'mode': (0, 1)}", "variants['mode'] must list its values as strings"),
        ("tolerance={'float32': 1e-5}, variants={'mode': ('a', 'a')}", "lists a value twice"),
        (
            "tolerance={'float32': 1e-5}, suites={'t': Suite('s', '', ('mine',), CASES)}",
            "must be a perfbot.Suite named 't'",
        ),
        (
            "tolerance={'float32': 1e-5}, suites={'s': Suite('s', '', ('theirs',), CASES)}",
            "unknown implementation 'theirs'",
        ),
        (
            "tolerance={'float16': 1e-3}, suites={'s': Suite('s', '', ('mine',), CASES)}",
            "dtype must be one the subject",
        ),
        (
            "tolerance={'float32': 1e-5}, suites={'s': Suite('s', '', ('mine',), CASES + CASES)}",
            "case name 'c' appears twice",
        ),
        (
            "tolerance={'float32': 1e-5}, "
            "suites={'s': Suite('s', '', ('mine',), (Case('s', 'z', {'n': 0}, 'float32'),))}",
            "got n=0",
        ),
        ("tolerance={'float32': 1e-5}, suites={}", "has no suites"),
        ("tolerance={'float32': 1e-5}, grad_tolerance={'float32': -1}", "grad_tolerance['float32'] must be a finite"),
        ("tolerance={'float32': 1e-5}, grad_tolerance={}", "grad_tolerance must map each dtype"),
        ("tolerance={'float32': 1e-5}, grad_inputs=[0, 0]", "grad_inputs must list the distinct positions"),
        ("tolerance={'float32': 1e-5}, grad_inputs=[-1]", "grad_inputs must list the distinct positions"),
        ("tolerance={'float32': 1e-5}, grad_inputs=(True,)", "grad_inputs must list the distinct positions"),
        ("tolerance={'float32': 1e-5}, grad_inputs=()", "grad_inputs must list the distinct positions"),
        (
            "tolerance={'float32': 1e-5}, "
            "suites={'s': Suite('s', '', ('mine',), (Case('s', 'c', {'n': 8}, 'float32', 'sideways'),))}",
            "case 'c': mode must be one of forward, backward, forward+backward, got 'sideways'",
        ),
    ],
)
def test_a_subject_declared_wrong_is_bad_input(tmp_path: Path, declaration: str, words: str):
    package = _write(
        tmp_path,
        HEADER
        + f"subject = Subject('t', lambda c, g: (), lambda: 0, {declaration})\n"
        + "subject.implementation('mine', under_test=True)(lambda **v: 0)\n"
        + ("" if "suites=" in declaration else "subject.suites = {'s': Suite('s', '', ('mine',), CASES)}\n"),
    )
    with pytest.raises(BadInput) as error:
        load_subject(package)
    assert words in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("modes", ["'backward'", "()", "('sideways',)"])
def test_an_implementations_modes_are_some_of_the_three(tmp_path: Path, modes: str):
    package = _write(
        tmp_path,
        HEADER
        + "subject = Subject('t', lambda c, g: (), lambda: 0, tolerance={'float32': 1e-5})\n"
        + f"subject.implementation('mine', under_test=True, modes={modes})(lambda **v: 0)\n"
        + "subject.suites = {'s': Suite('s', '', ('mine',), CASES)}\n",
    )
    with pytest.raises(BadInput) as error:
        load_subject(package)
    assert "implementation 'mine': modes= must list some of forward, backward, forward+backward" in str(error.value)


def test_a_package_that_exits_on_import_is_bad_input_not_a_pass(tmp_path: Path):
    package = _write(tmp_path, "import sys\nsys.exit(0)\n")
    with pytest.raises(BadInput, match=r"pkg: importing the package called sys.exit\(0\)$"):
        load_subject(package)


def test_an_absolute_self_import_loads_each_checkouts_own_copy(tmp_path: Path, monkeypatch):
    """Imported by its absolute name, the package would get whichever copy Python finds first (here
    the one on sys.path): each checkout's copy is imported from that checkout instead, and kept out
    of sys.modules, where what was there before comes back."""
    for checkout, factor in (("one", 2), ("two", 3)):
        package = _write(tmp_path / checkout, "", name="selfish")
        (package / "kernel.py").write_text(f"def double(x):\n    return {factor} * x\n")
        (package / "__init__.py").write_text(
            HEADER
            + "from selfish.kernel import double\n"
            + "subject = Subject('t', lambda c, g: (), lambda: 0, {'float32': 1e-5}, "
            + "suites={'s': Suite('s', '', ('mine',), CASES)})\n"
            + "subject.implementation('mine', under_test=True)(double)\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path / "two"))
    before = types.ModuleType("selfish")
    monkeypatch.setitem(sys.modules, "selfish", before)
    one, two = load_subject(tmp_path / "one" / "selfish"), load_subject(tmp_path / "two" / "selfish")
    assert one.implementations["mine"].fn(1) == 2 and two.implementations["mine"].fn(1) == 3
    assert sys.modules["selfish"] is before and "selfish.kernel" not in sys.modules
    assert one.modules["selfish.kernel"].__file__ == str(tmp_path / "one" / "selfish" / "kernel.py")
    again = load_subject(tmp_path / "one" / "selfish", instance="again")  # imported anew, as modules of its own
    assert again.modules["selfish.kernel"] is not one.modules["selfish.kernel"]
    assert load_subject(tmp_path / "one" / "selfish").modules is one.modules  # the same load: the same modules


def test_a_case_is_found_by_name_alone(geglu):
    assert geglu.case(None, "d1024").suite == "a100"  # only a100 has it
    assert geglu.case(None, "t5-v1.1-xl").suite == "pr"  # pr (the default case's suite) and models have it
    # a100 times it forward, backward-a100 backward and a training step: the mode picks the suite.
    assert geglu.case(None, "d1024", "backward").suite == "backward-a100"
    assert geglu.case(None, "d1024", "forward+backward").mode == "forward+backward"
    assert geglu.case(None, "gemma-7b", "backward").suite == "backward-models"
    # pr, the default case's suite, times t5-v1.1-xl forward and backward, not a training step:
    # the suite that does is found, not pr's refused.
    assert geglu.case(None, "t5-v1.1-xl", "forward+backward").suite == "backward-models"
    assert geglu.case(None, "t5-v1.1-xl", "backward").suite == "pr"
    with pytest.raises(BadInput, match="no suite has a case 'nope'"):
        geglu.case(None, "nope")


def test_variant_names_are_unambiguous():
    from perfbot.records.run import variant_name

    assert variant_name("k", {"a": "1", "b": "0"}) != variant_name("k", {"a": "0", "b": "1"})
    assert variant_name("k", {"offset": "1"}) == "k[offset=1]" and variant_name("k", {}) == "k"


def test_a_case_several_suites_hold_is_timed_once_per_implementation():
    from perfbot.loading.subject import Case, Suite
    from perfbot.loading.suites import without_repeats

    shared = Case("x", "shared", {"M": 1}, "float16")
    small = Suite("small", "", ("fused", "eager"), (shared, Case("small", "own", {"M": 2}, "float16")))
    big = Suite("big", "", ("fused", "eager", "gemm"), (shared,))
    other = Suite("other", "", ("fused", "copy", "gemm"), (shared,))
    kept = without_repeats([small, big, other])
    timed = [(s.name, c.params["M"], s.implementations) for s in kept for c in s.cases]
    assert timed == [
        ("small", 2, ("fused", "eager")),  # its own case stays whole
        ("big", 1, ("fused", "eager", "gemm")),  # the shared case, where the most are timed
        ("other", 1, ("copy",)),  # only what none before timed on it
    ]


def test_a_suites_file_with_an_integer_too_long_for_python_is_refused(tmp_path: Path):
    path = tmp_path / "suites.yaml"
    path.write_text(f"quick:\n  about: small\n  dtype: float32\n  cases:\n    - {{name: a, M: 1{'0' * 5000}}}\n")
    with pytest.raises(BadInput, match=r"suites\.yaml: cannot read it as YAML: .*4300 digits") as error:
        load_suites(path, _toy())
    assert "\n" not in str(error.value)


def test_a_suite_whose_shared_case_times_other_implementations_stays_one_suite():
    # Two families' quick suites: one shape each, disjoint implementations. Each suite stays whole,
    # in its own order; nothing is timed twice, nothing left out.
    from perfbot.loading.subject import Case, Suite
    from perfbot.loading.suites import without_repeats

    a = Suite("a/quick", "", ("a/k",), (Case("a/quick", "small", {"M": 4}, "float32"),))
    b_cases = (Case("b/quick", "odd", {"M": 37}, "float16"), Case("b/quick", "small", {"M": 4}, "float32"))
    b = Suite("b/quick", "", ("b/k", "b/torch"), b_cases)
    kept = without_repeats([a, b])
    assert [(s.name, [c.name for c in s.cases], s.implementations) for s in kept] == [
        ("a/quick", ["small"], ("a/k",)),
        ("b/quick", ["odd", "small"], ("b/k", "b/torch")),
    ]
