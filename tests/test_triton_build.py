"""`perfbot triton build` on small stand-in repositories of both source layouts, built for real
with pip (the real Triton build downloads LLVM and only runs on a networked runner)."""

import json
import os
import shutil
import stat
import subprocess
import zipfile
from pathlib import Path
from typing import NamedTuple

import pytest
from click.testing import CliRunner

from perfbot.cli import perfbot
from perfbot.errors import BadInput, EnvironmentFailure
from perfbot.measuring import triton_build

SETUP = """
import os, pathlib
from setuptools import setup
here = pathlib.Path(__file__).parent
counter = os.environ.get("STANDIN_BUILD_COUNTER")
if counter:
    with open(counter, "a") as handle:
        handle.write("built\\n")
(here / "triton" / "build_env.txt").write_text(
    f"MAX_JOBS={os.environ.get('MAX_JOBS')}\\nCCACHE={os.environ.get('TRITON_BUILD_WITH_CCACHE')}\\n")
setup(name="triton", version="0.0.1", packages=["triton"], package_data={"triton": ["build_env.txt"]})
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def standin(tmp_path: Path, layout: str) -> tuple[Path, str, str]:
    """A git repository shaped like Triton's old (python/setup.py) or new (setup.py) layout:
    a good commit, then one whose build fails."""
    repo = tmp_path / f"triton-{layout}"
    package_root = repo / "python" if layout == "old" else repo
    (package_root / "triton").mkdir(parents=True)
    (package_root / "triton" / "__init__.py").write_text("VERSION = 'stand-in'\n")
    (package_root / "setup.py").write_text(SETUP)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "good")
    good = _git(repo, "rev-parse", "HEAD")
    (package_root / "setup.py").write_text("raise SystemExit('error: compiler exploded in lib/Dialect')\n")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "broken")
    return repo, good, _git(repo, "rev-parse", "HEAD")


def _wheel_env(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read("triton/build_env.txt").decode()


@pytest.mark.parametrize("layout", ["old", "new"])
def test_builds_once_then_hits_the_cache(tmp_path: Path, layout: str, monkeypatch):
    # The first build by the command line, which prints the wheel; the new layout's with ccache
    # on PATH, which the build is told to use.
    repo, good, _ = standin(tmp_path, layout)
    counter = tmp_path / "builds.txt"
    monkeypatch.setenv("STANDIN_BUILD_COUNTER", str(counter))
    if layout == "new":
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        ccache = bin_dir / "ccache"
        ccache.write_text('#!/bin/sh\nexec "$@"\n')
        ccache.chmod(ccache.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    cache = tmp_path / "cache"
    arguments = ["--triton-source", str(repo), "--triton-cache", str(cache), "--no-build-isolation"]
    result = CliRunner().invoke(perfbot, ["triton", "build", "--triton-commit", good, *arguments])
    assert result.exit_code == 0, result.output
    wheel = Path(result.stdout.strip().splitlines()[-1])
    assert wheel.is_file() and wheel.parent == cache / good and wheel.name.startswith("triton-0.0.1")
    assert f"MAX_JOBS={triton_build.max_jobs()}" in _wheel_env(wheel)
    assert layout == "old" or "CCACHE=true" in _wheel_env(wheel)
    runs_of_one_build = counter.read_text()  # pip runs setup.py more than once per build
    assert runs_of_one_build  # built
    again, built_again = triton_build.build(good[:10], str(repo), cache, build_isolation=False)
    assert (again, built_again) == (wheel, False)
    assert triton_build.build(good, str(repo), cache, build_isolation=False) == (wheel, False)
    assert counter.read_text() == runs_of_one_build  # the cache hits ran no build at all


def test_a_failed_build_exits_3_with_the_end_of_its_log(tmp_path: Path):
    repo, _, broken = standin(tmp_path, "old")
    cache = tmp_path / "cache"
    result = CliRunner().invoke(
        perfbot,
        [
            "triton",
            "build",
            "--triton-commit",
            broken,
            "--triton-source",
            str(repo),
            "--triton-cache",
            str(cache),
            "--no-build-isolation",
        ],
    )
    assert result.exit_code == 3
    assert "compiler exploded" in result.output and f"{broken}.log" in result.output
    assert not (cache / broken).exists()  # nothing half-built is cached
    assert [p.name for p in cache.iterdir()] == [f"{broken}.log"]


def test_bad_input(tmp_path: Path):
    repo, _, _ = standin(tmp_path, "new")
    with pytest.raises(BadInput, match="is not on a branch or tag of"):
        triton_build.build("deadbeefdeadbeef", str(repo), tmp_path / "c", build_isolation=False)
    with pytest.raises(BadInput, match="hex commit SHA"):
        triton_build.build("main; rm -rf /", str(repo), tmp_path / "c")
    with pytest.raises(BadInput, match="neither an existing path nor a URL"):
        triton_build.build("abcdef1", str(tmp_path / "nowhere"), tmp_path / "c")
    empty = tmp_path / "empty"
    subprocess.run(["git", "init", "-q", str(empty)], check=True)
    (empty / "README").write_text("x")
    _git(empty, "add", "-A")
    _git(empty, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    with pytest.raises(BadInput, match=r"neither setup\.py nor python/setup\.py"):
        triton_build.build(_git(empty, "rev-parse", "HEAD"), str(empty), tmp_path / "c")
    result = CliRunner().invoke(perfbot, ["triton", "build", "--triton-commit", "xyz", "--triton-source", str(repo)])
    assert result.exit_code == 2


def test_max_jobs_is_bounded_by_memory():
    gb = 1024**3
    assert triton_build.max_jobs(8 * gb, 64) == 2
    assert triton_build.max_jobs(1024 * gb, 8) == 8
    assert triton_build.max_jobs(1 * gb, 4) == 1


def test_the_default_commit_is_the_pinned_one(project: Path, tmp_path: Path):
    # No network here: a local stand-in lacks the pinned commit, which is reported as bad input.
    repo, _, _ = standin(tmp_path, "new")
    result = CliRunner().invoke(
        perfbot,
        [
            "triton",
            "build",
            "--project",
            str(project),
            "--triton-source",
            str(repo),
            "--triton-cache",
            str(tmp_path / "c"),
        ],
    )
    assert (
        result.exit_code == 2 and "7c56a5e40f7fd928dfd5c72902d5def0097db73a is not on a branch or tag" in result.output
    )


def test_an_unusable_cache_path(tmp_path: Path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput, match="must be a directory"):
        triton_build.build("abcdef1", "https://example.invalid/x.git", tmp_path / "file")
    assert EnvironmentFailure.exit_code == 3


class Built(NamedTuple):
    repo: Path
    good: str
    cache: Path  # holding the good commit's wheel, for a test to copy
    setup_runs: int  # of setup.py, in one build (pip runs it more than once)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The new layout's stand-in, its good commit built once for the module (two CPU seconds of
    pip), for the tests that start from a cache holding its wheel: of one pytest-xdist group,
    so that one worker builds it once. test_builds_once_then_hits_the_cache builds from nothing."""
    folder = tmp_path_factory.mktemp("built")
    repo, good, _ = standin(folder, "new")
    counter = folder / "builds.txt"
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("STANDIN_BUILD_COUNTER", str(counter))
        triton_build.build(good, str(repo), folder / "cache", build_isolation=False)
    return Built(repo, good, folder / "cache", counter.read_text().count("built"))


def _copied_cache(built: Built, tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    shutil.copytree(built.cache, cache)
    return cache


STARTING_BUILT = pytest.mark.xdist_group("triton_build_built")


@STARTING_BUILT
@pytest.mark.slow
def test_a_cached_wheel_is_used_only_if_its_digest_matches_the_record(built: Built, tmp_path: Path, monkeypatch):
    repo, good, cache = built.repo, built.good, _copied_cache(built, tmp_path)
    counter = tmp_path / "builds.txt"
    monkeypatch.setenv("STANDIN_BUILD_COUNTER", str(counter))
    wheel = triton_build.cached_wheel(cache, good)
    assert wheel is not None
    # A job that could write the cache swaps the wheel's bytes: the record no longer matches.
    wheel.write_bytes(wheel.read_bytes() + b"planted")
    notes = []
    again, built_again = triton_build.build(good, str(repo), cache, build_isolation=False, on_note=notes.append)
    assert built_again and counter.read_text().count("built") == built.setup_runs  # built once more
    assert "does not match its recorded digest" in notes[0] and triton_build.cached_wheel(cache, good) == again
    assert not again.read_bytes().endswith(b"planted")
    # A stray wheel dropped into an entry without a record is no hit either, and neither is a
    # record that names a file outside its entry.
    (cache / good / "wheel.json").write_text('{"wheel": "../evil.whl", "sha256": "0"}')
    assert triton_build.cached_wheel(cache, good) is None
    (cache / good / "wheel.json").unlink()
    assert triton_build.cached_wheel(cache, good) is None


@STARTING_BUILT
@pytest.mark.slow
def test_an_environment_is_reinstalled_when_the_wheel_changed(built: Built, tmp_path: Path):
    repo, good, cache = built.repo, built.good, _copied_cache(built, tmp_path)
    first = triton_build.environment(good, str(repo), cache, build_isolation=False)  # its wheel from the cache
    marker = first / "triton" / "planted.py"
    marker.write_text("print('left over')\n")
    assert triton_build.environment(good, str(repo), cache, build_isolation=False) == first and marker.exists()
    # A new build of the commit (a new wheel, its record updated as a build writes it).
    wheel = triton_build.cached_wheel(cache, good)
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr("triton/rebuilt.py", "REBUILT = True\n")
    record = json.loads((wheel.parent / "wheel.json").read_text())
    (wheel.parent / "wheel.json").write_text(json.dumps({**record, "sha256": triton_build.sha256_of(wheel)}))
    second = triton_build.environment(good, str(repo), cache, build_isolation=False)
    assert second == first and not marker.exists() and (second / "triton" / "rebuilt.py").is_file()


def test_from_a_url_only_published_commits_are_built(tmp_path: Path):
    """A pull request's commit is served by SHA (GitHub keeps refs/pull/N/head) but is on no branch
    or tag: a PR that moves the pin there must not make the runner build it."""
    from tests.git_http import GitHttpServer

    repo, good, _ = standin(tmp_path, "new")
    (repo / "triton" / "evil.py").write_text("print('unreviewed')\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "from a pull request")
    unpublished = _git(repo, "rev-parse", "HEAD")
    _git(repo, "update-ref", "refs/pull/1/head", unpublished)
    _git(repo, "reset", "-q", "--hard", good)
    served = tmp_path / "served"
    served.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", "--mirror", str(repo), str(served / "triton.git")], check=True)
    with GitHttpServer(served, "reader", "pw") as server:
        url = server.url.replace("http://", "http://reader:pw@") + "/triton.git"
        with pytest.raises(BadInput, match=f"commit {unpublished} is not on a branch or tag"):
            triton_build.build(unpublished, url, tmp_path / "cache", build_isolation=False)
        wheel, built = triton_build.build(good, url, tmp_path / "cache", build_isolation=False)
        assert built and wheel.parent.name == good
