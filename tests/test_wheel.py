"""What users install: the wheel built from a clean copy of the checkout, installed into fresh
environments outside it, runs every command.

- The core environment gets the wheel and its dependencies from the package index, and nothing
  else: no PyTorch, no Triton. The core commands work there; measuring ones say which extra
  they need (exit 3), in one line.
- The measuring environment gets the wheel alone (`--no-deps`), with this test environment's
  PyTorch and Triton visible behind it (a .pth line): every command starts, and those that
  need a GPU say so (exit 3) on a machine without one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from perfbot.records import results
from tests.conftest import HAS_GPU, ROOT
from tests.fake_github import FakeGitHub
from tests.helpers import make_results

# Builds a wheel and installs it into fresh virtual environments: minutes, in the slow tier, and
# on one pytest-xdist worker, which builds them once (`--dist loadgroup`).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]

COMMANDS = [
    "init",
    "run",
    "show",
    "compare",
    "baseline",
    "baseline update",
    "baseline show",
    "export",
    "comment",
    "triton",
    "triton build",
    "bisect",
    "selftest",
    "sample",
    "suites",
    "env",
    "verify-head",
]


def _clean_copy(destination: Path) -> Path:
    """The files a fresh clone of this checkout would hold (tracked, plus new files git would add)."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = _clean_copy(tmp_path_factory.mktemp("clean-checkout"))
    dist = tmp_path_factory.mktemp("dist")
    # Built by the backend that pyproject.toml names, called as a PEP 517 front end such as pip
    # calls it (pip's wheel command starts three interpreters for it: 1.5 CPU-s more).
    backend = tomllib.loads((source / "pyproject.toml").read_text())["build-system"]["build-backend"]
    subprocess.run(
        [sys.executable, "-c", f"import sys, {backend} as backend; backend.build_wheel(sys.argv[1])", str(dist)],
        cwd=source,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = dist.glob("perfbot-*.whl")
    return built


def _venv(where: Path) -> Path:
    # Without a pip of its own: ensurepip installs and byte-compiles one in every new environment
    # (6 CPU-s each); uv installs into it instead (_install).
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=300)
    return where / "bin"


def _install(bin_dir: Path, *args: str) -> list[str]:
    """The command line that installs into the environment of bin_dir: `uv pip install`.

    What these environments test is the wheel and what it declares, not the installer: uv
    resolves and installs them from the package index as pip does, where pip spent most of the
    core test's CPU reading the index's pages of every release of numpy and scipy (45 CPU-s with
    pip, 12 with uv). The workflows' install step (install.sh, below) is tested with pip."""
    from uv import find_uv_bin  # the test extra's; a GPU machine collecting `-m gpu` may lack it

    return [find_uv_bin(), "pip", "install", "--quiet", "--python", str(bin_dir / "python"), *args]


@pytest.fixture(scope="module")
def core(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    bin_dir = _venv(tmp_path_factory.mktemp("core-env") / "venv")
    done = subprocess.run(
        _install(bin_dir, str(wheel)),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return bin_dir


@pytest.fixture(scope="module")
def measuring(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gpu-env") / "venv"
    bin_dir = _venv(root)
    subprocess.run(
        _install(bin_dir, "--no-deps", str(wheel)),
        check=True,
        capture_output=True,
        timeout=300,
    )
    site = Path(
        subprocess.run(
            [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "zz-test-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return bin_dir


def _perfbot(bin_dir: Path, *args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(bin_dir / "perfbot"), *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env
    )


def test_the_wheel_holds_every_subpackage_and_template_and_no_subject(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    shipped = (".py", ".j2", ".yml", ".yaml", ".sh", ".txt")  # the code, its templates, the files perfbot init copies
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "perfbot").rglob("*") if p.suffix in shipped}
    assert sources <= set(names), sorted(sources - set(names))
    assert "perfbot/commands/run.py" in names and "perfbot/output/templates/comment.md.j2" in names
    assert not [n for n in names if n.startswith(("kernels/", "tests/", "scripts/"))]
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core_requires = [line for line in requires if "extra ==" not in line]
    assert not [line for line in core_requires if "torch" in line or "triton" in line], core_requires
    assert any("torch" in line and 'extra == "gpu"' in line for line in requires)


# perfbot's commands run one after another in one process of an environment, each as `perfbot
# ARGS` would run it (its exit code, stdout and stderr): a process each costs a start-up and the
# imports again (PyTorch's alone, 2.6 CPU-s, in the measuring environment).
IN_ONE_PROCESS = """
import contextlib, io, json, sys, traceback
from perfbot.cli import perfbot
ran = []
for args in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            perfbot.main(args, prog_name="perfbot")
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
        except BaseException:
            traceback.print_exc()
            code = 1
    ran.append([code, out.getvalue(), err.getvalue()])
print(json.dumps(ran))
"""


def _perfbots(
    bin_dir: Path, commands: list[list[str]], cwd: Path, env: dict | None = None
) -> list[subprocess.CompletedProcess]:
    """`perfbot COMMAND` for each command, in one process of the environment of bin_dir."""
    done = subprocess.run(
        [str(bin_dir / "python"), "-c", IN_ONE_PROCESS, json.dumps(commands)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    ran = json.loads(done.stdout)
    return [
        subprocess.CompletedProcess(["perfbot", *args], *outcome) for args, outcome in zip(commands, ran, strict=True)
    ]


def test_core_commands_run_from_the_core_install_outside_the_checkout(
    core: Path, wheel: Path, tmp_path: Path, monkeypatch
):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    assert subprocess.run([str(core / "python"), "-c", "import torch"], capture_output=True).returncode != 0
    assert subprocess.run([str(core / "python"), "-c", "import triton"], capture_output=True).returncode != 0
    done = _perfbot(core, "--help", cwd=outside)
    assert done.returncode == 0 and "Usage:" in done.stdout, done.stderr
    results.save(make_results(seed=1), outside / "base.json")
    results.save(make_results({("fused", "gemma-2b"): 1.2}, seed=2), outside / "head.json")
    compare = ["compare", "base.json", "head.json", "--thresholds", str(ROOT / "thresholds.yaml")]
    compare += ["--out-markdown", "comment.md", "--out-json", "comparison.json"]
    post = ["comment", "--repo", "octo/perfbot", "--pr", "7", "--body-file", "comment.md", "--sha", "a" * 40]
    post += ["--status", "failure"]
    with FakeGitHub(token="ghs_wheelTOKEN") as github:
        github.add_pull("octo/perfbot", 7, "a" * 40)
        env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "GITHUB_TOKEN": "ghs_wheelTOKEN",
            "GITHUB_API_URL": github.url,
        }
        *helps, compared, shown, stored, listed, exported, refused, needs_gpu = _perfbots(
            core,
            [
                *([*command.split(), "--help"] for command in COMMANDS),
                compare,
                ["show", "head.json", "--markdown"],
                ["baseline", "update", "base.json", "--store", "store"],
                ["baseline", "show", "--store", "store"],
                ["export", "head.json", "--out", "head.pytest-benchmark.json"],
                post,  # the core alone does not post: github3.py comes with the github extra
                ["run", "--project", str(ROOT)],
            ],
            cwd=outside,
            env=env,
        )
        # Each command's help (a process each took 12 s).
        assert [h.returncode for h in helps] == [0] * len(COMMANDS), [h.stderr for h in helps]
        usages = {
            c: "Usage:" if h.stdout.startswith(f"Usage: perfbot {c}") else h.stdout
            for c, h in zip(COMMANDS, helps, strict=True)
        }
        assert usages == dict.fromkeys(COMMANDS, "Usage:")
        assert compared.returncode == 1, compared.stderr  # the 20% slowdown
        assert json.loads((outside / "comparison.json").read_text())["fails"] is True
        assert shown.returncode == 0
        assert stored.returncode == 0 and "stored" in stored.stdout, stored.stderr
        assert "baseline" in listed.stdout
        assert exported.returncode == 0 and (outside / "head.pytest-benchmark.json").is_file()
        assert refused.returncode == 3, refused.stdout + refused.stderr
        assert refused.stderr == "perfbot: error: perfbot comment needs github3.py: pip install 'perfbot[github]'\n"
        assert github.comments == {} and github.statuses == {}
        assert needs_gpu.returncode == 3 and needs_gpu.stderr.count("\n") == 1, needs_gpu.stderr
        assert "pip install 'perfbot[gpu]'" in needs_gpu.stderr and "Traceback" not in needs_gpu.stderr
        extra = _install(core, f"{wheel}[github]")
        subprocess.run(extra, check=True, capture_output=True, timeout=900)
        posted = _perfbot(core, *post, cwd=outside, env=env)
        assert posted.returncode == 0, posted.stdout + posted.stderr
        assert len(github.comments[("octo/perfbot", 7)]) == 1


def test_measuring_commands_start_from_the_wheel(measuring: Path, tmp_path: Path, project: Path):
    """The measuring commands, and the example's adoption steps outside this checkout: a
    repository of its own whose package imports perfbot's Subject from the installed wheel checks
    its kernels with the wheel's perfbot, from a shell where nothing chose Triton's interpreter.
    One process of the environment runs them all, in that repository: PyTorch is imported once,
    not in a second process (3 CPU-s)."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    located = subprocess.run(
        [str(measuring / "python"), "-c", "import perfbot; print(perfbot.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=outside,
    ).stdout
    assert located.startswith(str(measuring.parent)), located  # the wheel's perfbot, not the checkout's
    repo = tmp_path / "rmsnorm"
    shutil.copytree(ROOT / "examples" / "rmsnorm", repo, ignore=shutil.ignore_patterns("__pycache__", "results"))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    # Without a GPU, the measuring commands say that they need one.
    refusing = [] if HAS_GPU else [["run"], ["sample", "--suite", "pr", "--case", "t5-v1.1-xl"], ["selftest"]]
    checked, suites, environment, *refused = _perfbots(
        measuring,
        [
            # First, before anything imports Triton: on a machine without a GPU the check chooses
            # Triton's interpreter (TRITON_INTERPRET=1, as the test environment has it) for the
            # process, and Triton reads that when imported.
            ["check"],
            ["suites", "--project", str(project)],
            ["env", "--json"],
            *([*c, "--project", str(project)] for c in refusing),
        ],
        cwd=repo,
        env=env,
    )
    assert suites.returncode == 0 and "decode:" in suites.stdout, suites.stderr
    assert environment.returncode == 0 and json.loads(environment.stdout)["perfbot"], environment.stderr
    for done in refused:
        assert done.returncode == 3 and "no CUDA GPU" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "21 right, 0 wrong, of 21" in checked.stdout  # every variant


def test_init_writes_its_files_from_the_wheel(measuring: Path, tmp_path: Path):
    repo = tmp_path / "repo"
    (repo / "src" / "pkg").mkdir(parents=True)
    (repo / "src" / "pkg" / "__init__.py").write_text("def double(x):\n    return 2 * x\n")
    done = _perfbot(measuring, "init", "--kernel", "pkg:double", "--triton-commit", "a" * 40, "--workflows", cwd=repo)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / "thresholds.yaml").read_bytes() == (ROOT / "thresholds.yaml").read_bytes()
    assert (repo / ".github" / "workflows" / "gpu-check.yml").is_file() and (repo / "perf" / "double").is_dir()


INSTALL = ROOT / ".github" / "perfbot" / "install.sh"


def test_the_workflows_install_step_takes_perfbot_from_a_pinned_source(tmp_path: Path):
    """What a job of another repository runs (.github/perfbot/install.sh core), with perfbot's
    source git+https://github.com/octo/perfbot@SHA: git, which pip runs, is told to fetch that
    address from a repository here holding a clean copy of this checkout (url.insteadOf)."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "examples" / "rmsnorm", project, ignore=shutil.ignore_patterns("__pycache__", "results"))
    origin = _clean_copy(tmp_path / "origin")
    # Its objects stored uncompressed: pip's clone links them and reads them once (1 CPU-s less).
    git = ["git", "-C", str(origin), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.compression=0"]
    subprocess.run([*git, "init", "--quiet"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "perfbot"], check=True)
    sha = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    # The repository's path, not its file:// address: git clones a path by linking its objects,
    # where over file:// it packs and compresses the whole copy first (4 CPU-s).
    env = {
        **os.environ,
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{origin}.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/octo/perfbot",
    }
    unpinned = subprocess.run(
        ["bash", str(INSTALL), "core"],
        cwd=project,
        env={**env, "PERFBOT_SOURCE": "git+https://github.com/octo/perfbot@main"},
        capture_output=True,
        text=True,
    )
    assert unpinned.returncode == 2 and "must be perfbot pinned to a full commit" in unpinned.stderr
    assert not (project / ".venv").exists()
    done = subprocess.run(
        ["bash", str(INSTALL), "core"],
        cwd=project,
        env={**env, "PERFBOT_SOURCE": f"git+https://github.com/octo/perfbot@{sha}"},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (record,) = (project / ".venv").glob("lib/python*/site-packages/perfbot-*.dist-info/direct_url.json")
    installed = json.loads(record.read_text())
    assert installed["url"] == "https://github.com/octo/perfbot" and installed["vcs_info"]["commit_id"] == sha
    version = _perfbot(project / ".venv" / "bin", "--version", cwd=project)
    assert version.returncode == 0 and "0.1.0" in version.stdout, version.stderr
