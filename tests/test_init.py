"""`perfbot init` in a repository that exists already: a generated git repository of a src/
layout, whose kernel perfbot has never seen. init writes the subject to fill in, the
[tool.perfbot] table and the default policy, refuses to write over anything, and stops where it
has no Triton commit to pin. The skeleton loads, fails `perfbot check` until it is filled in,
and passes it once it is. And a project without a thresholds.yaml is judged with perfbot's
defaults, which every report says."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from perfbot.adopting import kernel_source, scaffold
from perfbot.cli import perfbot
from perfbot.config import load_project_config
from perfbot.deciding.thresholds import DEFAULT_NOTE, DEFAULT_PATH, default_policy, load_policy
from perfbot.jobs.ab import policy_change
from perfbot.measuring import environment
from perfbot.records import results
from tests.conftest import ROOT
from tests.helpers import make_results
from tests.test_runner_cpu import _git

SHA = "0123456789abcdef0123456789abcdef01234567"
RELEASE = "7c56a5e40f7fd928dfd5c72902d5def0097db73a"  # Triton 3.6.0's tag (environment.RELEASE_COMMITS)
PYPROJECT = '[project]\nname = "mypkg"\nversion = "0.1"\n\n[tool.ruff]\nline-length = 100\n'
KERNEL = '''\
"""RMSNorm in Triton: y = x / sqrt(mean(x^2) + eps) * weight, one program per row."""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(x_ptr, weight_ptr, y_ptr, stride, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    columns = tl.arange(0, BLOCK)
    inside = columns < cols
    x = tl.load(x_ptr + row * stride + columns, mask=inside, other=0.0).to(tl.float32)
    weight = tl.load(weight_ptr + columns, mask=inside, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / cols + eps)
    tl.store(y_ptr + row * stride + columns, (x * rstd * weight).to(y_ptr.dtype.element_ty), mask=inside)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    if weight.shape != (x.shape[-1],):
        raise ValueError(f"rmsnorm: weight must have shape ({x.shape[-1]},), got {tuple(weight.shape)}")
    x = x.contiguous()
    y = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[-1])
    _rmsnorm_kernel[(x.shape[0],)](x, weight.contiguous(), y, x.stride(0), x.shape[-1], eps, BLOCK=block)
    return y
'''
# What a user writes into the places init marked, each a line of the skeleton replaced.
FILLED = {
    "    weight = torch.randn(case.rows, case.cols, generator=generator, device=device).to(dtype)\n": (
        "    weight = (0.5 + torch.rand(case.cols, generator=generator, device=device)).to(dtype)\n"
    ),
    '    raise NotImplementedError("perfbot init: write the float64 reference")\n': (
        "    x, weight = x.double(), weight.double()\n"
        "    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight\n"
    ),
}
BASELINE = {
    '    raise NotImplementedError("perfbot init: write the PyTorch baseline")\n': (
        "    return torch.nn.functional.rms_norm(x, (x.shape[-1],), weight, 1e-6)\n"
    ),
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """An existing repository of kernels: src/mypkg/ops/rmsnorm.py, a Triton kernel and the
    wrapper its callers call, one commit, no perfbot in it."""
    root = tmp_path / "repo"
    (root / "src" / "mypkg" / "ops").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "src" / "mypkg" / "__init__.py").write_text("")
    (root / "src" / "mypkg" / "ops" / "rmsnorm.py").write_text(KERNEL)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "kernels")
    return root


@pytest.fixture
def unset_commit(monkeypatch):
    monkeypatch.delenv("PERFBOT_TRITON_COMMIT", raising=False)


def _init(repo: Path, *args: str):
    return CliRunner().invoke(perfbot, ["init", "--project", str(repo), *args])


def _tree(repo: Path) -> dict[str, object]:
    """Everything in the repository but git's own, links not followed: each folder (an empty one
    too), each link's target, each file's bytes and mode."""
    found: dict[str, object] = {}
    for folder, folders, files in os.walk(repo):
        folders[:] = [name for name in folders if Path(folder, name) != repo / ".git"]
        for name in folders + files:
            path = Path(folder) / name
            if path.is_symlink():
                found[str(path.relative_to(repo))] = ("link", os.readlink(path))
            elif path.is_dir():
                found[str(path.relative_to(repo))] = "folder"
            else:
                found[str(path.relative_to(repo))] = (path.read_bytes(), path.stat().st_mode)
    return found


def _check(repo: Path) -> Result:
    """`perfbot check` of the repository, run in this process (the subject's code runs in a fork
    of it), with the Triton commit the project pins: no warning that it is another. A fresh
    interpreter here would only import PyTorch again; `perfbot check` as a user runs it, in a
    process of its own where nothing chose Triton's interpreter yet, is run on an adopted repository
    by tests/test_readme_adoption.py and on examples/rmsnorm by tests/test_example.py."""
    return CliRunner().invoke(perfbot, ["check", "--project", str(repo)], env={"PERFBOT_TRITON_COMMIT": SHA})


def _fill(path: Path, places: dict[str, str]) -> None:
    text = path.read_text()
    for marked, written in places.items():
        assert marked in text, marked
        text = text.replace(marked, written)
    path.write_text(text)


# --- what init writes ------------------------------------------------------------------------


def test_init_writes_the_subject_the_table_and_the_policy_and_says_what_comes_next(repo: Path, monkeypatch):
    monkeypatch.setenv("PERFBOT_TRITON_COMMIT", SHA)
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm")
    assert result.exit_code == 0, result.output
    assert sorted(_git(repo, "ls-files", "--modified", "--others").splitlines()) == [
        "perf/__init__.py",
        "perf/rmsnorm/__init__.py",
        "perf/rmsnorm/suites.yaml",
        "pyproject.toml",
        "thresholds.yaml",
    ]
    text = (repo / "pyproject.toml").read_text()
    assert text.startswith(PYPROJECT)  # appended: the file's own text is left as it was
    assert tomllib.loads(text)["tool"]["perfbot"] == {"triton-commit": SHA, "kernels": "perf"}
    config = load_project_config(repo)
    assert config.kernels_dir == repo / "perf" and config.triton_commit == SHA
    # The kernels package lists the families: this one, imported from its folder.
    assert (
        (repo / "perf" / "__init__.py")
        .read_text()
        .endswith("\nfrom .rmsnorm import subject as rmsnorm\n\nsubjects = [rmsnorm]\n")
    )
    assert (repo / "thresholds.yaml").read_bytes() == DEFAULT_PATH.read_bytes()
    subject = (repo / "perf" / "rmsnorm" / "__init__.py").read_text()
    assert "from mypkg.ops.rmsnorm import rmsnorm\n" in subject  # the package by its name
    assert "    # rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float=1e-06)\n" in subject
    assert "def reference_float64(x, weight) -> torch.Tensor:" in subject
    assert '@subject.implementation("rmsnorm", under_test=True)' in subject
    assert "    return rmsnorm(x, weight)\n" in subject
    # The places to write: the inputs, the reference, the tolerance, the baseline; and the cases.
    marks = re.compile(rf"(?m)^ *# {scaffold.MARK}")
    assert len(marks.findall(subject)) == 4
    assert len(marks.findall((repo / "perf" / "rmsnorm" / "suites.yaml").read_text())) == 1
    lines = result.output.splitlines()
    assert f"Triton commit {SHA}: the environment variable PERFBOT_TRITON_COMMIT" in lines
    assert lines[-4:] == [
        "Next:",
        f'  1. write the places marked "# {scaffold.MARK}": grep -rn "{scaffold.MARK}" perf/rmsnorm',
        "  2. perfbot check                  # no GPU needed: the quick suite against your reference",
        "  3. perfbot run --out run.json     # on a GPU; then perfbot ab main, this checkout against main",
    ]


def test_a_release_wheel_is_pinned_at_its_tags_commit_and_says_so(repo: Path, unset_commit, monkeypatch):
    monkeypatch.setattr(environment, "triton_version", lambda: "3.6.0")
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--name", "norm", "--dir", "bench/norm")
    assert result.exit_code == 0, result.output
    assert f"Triton commit {RELEASE}: Triton 3.6.0, a release: the commit its v3.6.0 tag points to" in result.output
    table = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["perfbot"]
    assert table == {"triton-commit": RELEASE, "kernels": "bench"}
    subject = (repo / "bench" / "norm" / "__init__.py").read_text()
    assert 'name="norm",' in subject
    # The implementation under test is named after the family, and calls the function by its own name.
    assert (
        '@subject.implementation("norm", under_test=True)' in subject and "    return rmsnorm(x, weight)\n" in subject
    )
    assert 'implementations: ["norm", "torch"]' in (repo / "bench" / "norm" / "suites.yaml").read_text()


def test_without_a_pyproject_init_writes_one_holding_the_table(repo: Path):
    (repo / "pyproject.toml").unlink()
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA)
    assert result.exit_code == 0, result.output
    assert "wrote [tool.perfbot] into a new pyproject.toml" in result.output
    assert load_project_config(repo).triton_commit == SHA
    assert "Written by `perfbot init`" in (repo / "pyproject.toml").read_text()


@pytest.mark.parametrize(
    "version,commit,source",
    [
        ("3.6.0", RELEASE, "Triton 3.6.0, a release: the commit its v3.6.0 tag points to"),
        (f"3.7.0+git{SHA}", SHA, f"the installed Triton's version, 3.7.0+git{SHA} (a build from source)"),
        ("3.7.0+git0123abcd", "0123abcd", "the installed Triton's version, 3.7.0+git0123abcd (a build from source)"),
    ],
)
def test_the_triton_commit_is_found_with_where_it_came_from(unset_commit, version, commit, source):
    assert environment.found_triton_commit(version) == environment.FoundCommit(commit, source)
    assert environment.triton_commit(version) == commit


def test_the_environment_variable_wins_and_an_unknown_release_has_no_commit(unset_commit, monkeypatch):
    assert environment.found_triton_commit("3.99.0") is None
    monkeypatch.setenv("PERFBOT_TRITON_COMMIT", SHA)
    assert environment.found_triton_commit("3.6.0") == environment.FoundCommit(
        SHA, "the environment variable PERFBOT_TRITON_COMMIT"
    )


def test_a_second_init_writes_only_the_new_family_and_says_the_two_lines_to_add(repo: Path):
    (repo / "src" / "mypkg" / "ops" / "scale.py").write_text("def scale(x, factor=2.0):\n    return x * factor\n")
    assert _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA).exit_code == 0
    before = _tree(repo)
    result = _init(repo, "--kernel", "mypkg.ops.scale:scale")  # no commit asked: the table pins it already
    assert result.exit_code == 0, result.output
    after = _tree(repo)
    assert sorted(set(after) - set(before)) == ["perf/scale", "perf/scale/__init__.py", "perf/scale/suites.yaml"]
    assert {path: after[path] for path in before} == before  # perf/__init__.py, the table, the policy: untouched
    assert result.output.splitlines()[2:6] == [
        "Next:",
        "  1. add these two lines to perf/__init__.py, which lists the families:",
        "         from .scale import subject as scale",
        "         subjects.append(scale)",
    ]
    again = _init(repo, "--kernel", "mypkg.ops.scale:scale")
    assert again.exit_code == 2 and "perf/scale: already exists" in again.output
    elsewhere = _init(repo, "--kernel", "mypkg.ops.scale:scale", "--dir", "bench/scale")
    assert elsewhere.exit_code == 2, elsewhere.output
    assert (
        "--dir bench/scale: a kernel family goes in perf/, the package [tool.perfbot] kernels names" in elsewhere.output
    )
    assert _tree(repo) == after


@pytest.mark.parametrize("folder", ["rmsnorm", "perf/rms-norm"])
def test_a_family_folder_that_cannot_be_imported_from_the_kernels_package_is_refused(repo: Path, folder: str):
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA, "--dir", folder)
    assert result.exit_code == 2, result.output
    assert "a kernel family goes in a folder" in result.output or "must be a Python name" in result.output
    assert not (repo / "perf").exists() and not (repo / "thresholds.yaml").exists()


# --- what init refuses -------------------------------------------------------------------------


def test_a_second_init_is_refused_and_writes_nothing(repo: Path):
    assert _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA).exit_code == 0
    before = _tree(repo)
    again = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA, "--workflows")
    assert again.exit_code == 2, again.output
    assert again.output.splitlines() == [
        f"perfbot: error: {repo / 'perf' / 'rmsnorm'}: already exists; perfbot init writes over nothing, "
        "so it wrote nothing (give --dir another folder)"
    ]
    assert _tree(repo) == before


def _written(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _link(path: Path) -> Path:
    path.symlink_to("nowhere")
    return path


def _folder(path: Path) -> Path:
    path.mkdir(parents=True)
    return path


def _table(repo: Path) -> Path:
    return _written(repo / "pyproject.toml", f'{PYPROJECT}\n[tool.perfbot]\ntriton-commit = "{SHA}"\n')


STANDING = {
    "the policy": lambda repo: _written(repo / "thresholds.yaml", "version: 1\n"),
    "a link where the policy goes, leading nowhere": lambda repo: _link(repo / "thresholds.yaml"),
    "the subject's folder, empty": lambda repo: _folder(repo / "perf" / "rmsnorm"),
    "a workflow": lambda repo: _written(repo / ".github" / "workflows" / "gpu-check.yml", "name: mine\n"),
    "CODEOWNERS": lambda repo: _written(repo / ".github" / "CODEOWNERS", ""),
}


@pytest.mark.parametrize("what", sorted(STANDING))
def test_anything_init_would_write_standing_already_is_refused_and_nothing_is_written(repo: Path, what: str):
    standing = STANDING[what](repo)
    before = _tree(repo)
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA, "--workflows")
    assert result.exit_code == 2, result.output
    (line,) = result.output.splitlines()
    assert line.startswith(f"perfbot: error: {standing}: already ") and "so it wrote nothing" in line
    assert _tree(repo) == before


def test_a_table_without_the_kernels_package_it_names_is_refused_and_nothing_is_written(repo: Path):
    _table(repo)  # [tool.perfbot] without kernels: the package is kernels/, which is not there
    before = _tree(repo)
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--workflows")
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        f"perfbot: error: {repo / 'kernels' / '__init__.py'}: no such file; [tool.perfbot] kernels names kernels, "
        "the package whose `subjects` lists the families, and perfbot init adds one beside the others there"
    ]
    assert _tree(repo) == before


def test_without_a_commit_to_pin_init_says_how_to_give_one_and_writes_nothing(repo: Path, unset_commit, monkeypatch):
    monkeypatch.setattr(environment, "triton_version", lambda: "3.99.0")
    before = _tree(repo)
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm")
    assert result.exit_code == 2, result.output
    assert result.output.splitlines() == [
        "perfbot: error: the installed Triton 3.99.0 is a release whose commit perfbot does not know; pass "
        "--triton-commit SHA, the commit its tag points to (git rev-parse v3.99.0^{commit} in a clone of "
        "github.com/triton-lang/triton), or set PERFBOT_TRITON_COMMIT"
    ]
    assert _tree(repo) == before
    assert _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA).exit_code == 0


@pytest.mark.parametrize(
    "version,given,words",
    [
        ("3.7.0+git0123abcd", None, "gives the Triton commit as '0123abcd', not a full 40-hex-digit one"),
        ("3.6.0", SHA[:39], "--triton-commit '0123456789abcdef0123456789abcdef0123456': must be a full commit"),
        ("3.6.0", SHA.upper(), "must be a full commit, 40 lower-case hex digits"),
    ],
)
def test_a_commit_that_is_not_a_full_one_is_refused(repo: Path, unset_commit, monkeypatch, version, given, words):
    monkeypatch.setattr(environment, "triton_version", lambda: version)
    before = _tree(repo)
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", *(["--triton-commit", given] if given else []))
    assert result.exit_code == 2 and words in result.output, result.output
    assert len(result.output.splitlines()) == 1 and _tree(repo) == before


@pytest.mark.parametrize(
    "spec,words",
    [
        ("mypkg.ops.rmsnorm", "expected MODULE:FUNCTION"),
        ("mypkg.ops.rms-norm:rmsnorm", "expected MODULE:FUNCTION"),
        ("otherpkg.ops:rmsnorm", "otherpkg is not one of"),
        ("mypkg.ops.layernorm:layernorm", "no module mypkg.ops.layernorm in"),
        ("mypkg.ops.rmsnorm:layernorm", "rmsnorm.py defines no layernorm at module level"),
        ("mypkg.ops.rmsnorm:_rmsnorm_kernel", "is a Triton kernel (@triton.jit), launched on a grid"),
    ],
)
def test_a_kernel_init_cannot_find_is_refused_in_one_line(repo: Path, spec: str, words: str):
    result = _init(repo, "--kernel", spec, "--triton-commit", SHA)
    assert result.exit_code == 2, result.output
    (line,) = result.output.splitlines()
    assert words in line
    assert not (repo / "thresholds.yaml").exists()


@pytest.mark.parametrize(
    "value,words", [("a/b", "--name 'a/b': 1 to 100 letters"), ("-x", "--name '-x'"), ("x" * 101, "--name 'xxx")]
)
def test_a_name_that_would_not_make_a_folder_is_refused(repo: Path, value: str, words: str):
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA, "--name", value)
    assert result.exit_code == 2 and words in result.output, result.output


@pytest.mark.parametrize("folder", ["..", "../elsewhere", "."])
def test_a_subject_folder_outside_the_project_is_refused(repo: Path, folder: str):
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA, "--dir", folder)
    assert result.exit_code == 2 and "must be a folder inside the project" in result.output, result.output


def test_a_function_re_exported_by_a_package_is_read_where_it_is_defined(repo: Path):
    (repo / "src" / "mypkg" / "ops" / "__init__.py").write_text("from .rmsnorm import rmsnorm as norm\n")
    kernel = kernel_source.find_kernel(repo, "mypkg.ops:norm")
    assert kernel.path == repo / "src" / "mypkg" / "ops" / "rmsnorm.py"
    assert kernel.parameters == ("x", "weight")
    assert kernel.signature == "norm(x: torch.Tensor, weight: torch.Tensor, eps: float=1e-06)"


def test_a_function_torch_scripted_is_no_triton_kernel(repo: Path):
    (repo / "src" / "mypkg" / "ops" / "rmsnorm.py").write_text(
        "import torch\n\n\n@torch.jit.script\ndef scaled(x, factor: float = 2.0):\n    return x * factor\n"
    )
    kernel = kernel_source.find_kernel(repo, "mypkg.ops.rmsnorm:scaled")
    assert kernel.parameters == ("x",) and kernel.signature == "scaled(x, factor: float=2.0)"


def test_arguments_named_as_the_module_names_its_own_are_renamed(repo: Path):
    (repo / "src" / "mypkg" / "ops" / "rmsnorm.py").write_text("def scale(case, device, *, factor=2):\n    pass\n")
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:scale", "--triton-commit", SHA)
    assert result.exit_code == 0, result.output
    subject = (repo / "perf" / "scale" / "__init__.py").read_text()
    assert "def under_test(case_, device_) -> torch.Tensor:" in subject and "return (case_, device_)" in subject


# --- the skeleton under perfbot check ------------------------------------------------------------


def test_the_skeleton_loads_fails_the_check_until_filled_in_then_passes_it(repo: Path):
    assert _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA).exit_code == 0
    subject = repo / "perf" / "rmsnorm" / "__init__.py"
    as_written = _check(repo)
    assert as_written.exit_code == 2, as_written.output
    assert as_written.stderr.strip().splitlines() == [
        "perfbot: error: subject 'rmsnorm': the reference (case rmsnorm/quick/small) raised "
        "NotImplementedError: "
        "perfbot init: write the float64 reference"
    ]
    _fill(subject, FILLED)
    no_baseline = _check(repo)  # the baseline still raises: the check fails, never passes
    assert no_baseline.exit_code == 1, no_baseline.output
    assert "2 right, 2 wrong, of 4" in no_baseline.stdout
    _fill(subject, BASELINE)
    filled = _check(repo)
    assert filled.exit_code == 0, filled.output
    assert "perfbot check: rmsnorm on cpu" in filled.stdout and "4 right, 0 wrong, of 4" in filled.stdout


# --- the workflows ------------------------------------------------------------------------------


def _original(packaged: str) -> Path:
    """The file of perfbot's own repository that a packaged workflow file is a copy of."""
    if packaged == "workflows/perfbot-check.yml":
        return ROOT / "examples" / "rmsnorm" / ".github" / "workflows" / "check.yml"  # the CPU check
    return ROOT / ".github" / packaged


COPIES = {f"templates/github/{packaged}": _original(packaged) for packaged in scaffold._GITHUB_FILES}


@pytest.mark.parametrize("packaged", sorted(COPIES))
def test_the_packaged_workflows_are_links_to_perfbots_own(packaged: str):
    # One source: the package carries a link, which the wheel's build turns into the file.
    shipped = ROOT / "perfbot" / "adopting" / packaged
    assert shipped.is_symlink() and shipped.resolve() == COPIES[packaged].resolve()


def test_the_packaged_policy_is_the_repositorys_thresholds_yaml():
    assert DEFAULT_PATH.is_symlink() and DEFAULT_PATH.resolve() == (ROOT / "thresholds.yaml").resolve()
    assert default_policy().defaults == load_policy(ROOT / "thresholds.yaml").defaults


def test_with_workflows_init_writes_perfbots_workflows_and_says_what_it_cannot(repo: Path):
    result = _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA, "--workflows")
    assert result.exit_code == 0, result.output
    for packaged, original in COPIES.items():
        written = repo / ".github" / packaged.removeprefix("templates/github/")
        assert written.read_bytes() == original.read_bytes()
        assert bool(written.stat().st_mode & stat.S_IXUSR) == written.name.endswith(".sh")
    owners = (repo / ".github" / "CODEOWNERS").read_text()
    assert "/perf/ @OWNER/perfbot-maintainers\n" in owners and f"# {scaffold.MARK} OWNER" in owners
    assert "/perfbot/" not in owners and "/kernels/" not in owners
    assert "note: the GPU check needs what no file can hold" in result.output
    assert "PERFBOT_SOURCE" in result.output and "PERFBOT_GPU_LABELS" in result.output


def test_the_codeowners_init_writes_passes_the_shipped_check_once_filled_in(repo: Path):
    """A subject's folder with a space in its name: CODEOWNERS names it escaped, and the
    codeowners.sh init wrote reads it as GitHub does, one pattern, the folder pyproject.toml names."""
    result = _init(
        repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA, "--workflows", "--dir", "my perf/rmsnorm"
    )
    assert result.exit_code == 0, result.output
    owners = repo / ".github" / "CODEOWNERS"
    assert "/my\\ perf/ @OWNER/perfbot-maintainers\n" in owners.read_text()

    def check() -> subprocess.CompletedProcess:
        return subprocess.run(["bash", ".github/perfbot/codeowners.sh"], cwd=repo, capture_output=True, text=True)

    shipped = check()
    assert shipped.returncode == 2 and "still names the placeholder @OWNER/" in shipped.stderr
    owners.write_text(owners.read_text().replace("@OWNER/", "@octo/"))
    done = check()
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout
        == "code owners: .github/CODEOWNERS gives an owner to .github/, thresholds.yaml, pyproject.toml, my perf/\n"
    )
    owners.write_text(owners.read_text().replace("/my\\ perf/ @octo/perfbot-maintainers", "/my\\ perf/"))
    unowned = check()
    assert unowned.returncode == 2 and "`/my\\ perf/` names no owner" in unowned.stderr


# --- a project without a thresholds.yaml ------------------------------------------------------------


def test_compare_without_a_policy_judges_with_perfbots_defaults_and_says_so(repo: Path, tmp_path: Path):
    assert _init(repo, "--kernel", "mypkg.ops.rmsnorm:rmsnorm", "--triton-commit", SHA).exit_code == 0
    (repo / "thresholds.yaml").unlink()
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    results.save(make_results(seed=1), base)
    results.save(make_results(seed=2), head)
    comment = tmp_path / "comment.md"
    result = CliRunner().invoke(
        perfbot, ["compare", str(base), str(head), "--project", str(repo), "--out-markdown", str(comment)]
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines()[0] == (
        f"perfbot: note: {repo / 'thresholds.yaml'}: no such file; judging with perfbot's defaults "
        f"({DEFAULT_PATH}); copy that file there to set the project's own"
    )
    text = comment.read_text()
    assert f"- {DEFAULT_NOTE}" in text.replace("\\", "") and "policy: default-thresholds.yaml" in text
    (repo / "thresholds.yaml").write_text(DEFAULT_PATH.read_text())
    own = CliRunner().invoke(perfbot, ["compare", str(base), str(head), "--project", str(repo)])
    assert own.exit_code == 0 and "perfbot: note:" not in own.stderr


def test_the_ab_says_which_policy_judged_when_the_checkout_has_none(tmp_path: Path):
    policy = default_policy()
    assert policy_change(policy, tmp_path) == ()  # neither side has one: the report's note says so
    stricter = DEFAULT_PATH.read_text().replace("fail_percent: 6.0", "fail_percent: 7.0")
    (tmp_path / "thresholds.yaml").write_text(stricter)
    lead, *lines = policy_change(policy, tmp_path)
    assert lead == "This check applied perfbot's default policy; the other side's differs:"
    assert lines == ["thresholds defaults.fail_percent: 6 → 7"]
