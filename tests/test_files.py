import os
import re
import socket
import stat
from pathlib import Path

import pytest

from perfbot.errors import BadInput
from perfbot.files import read_text, write_atomic
from tests.conftest import quick_first


def test_write_atomic_replaces_or_keeps_and_leaves_no_temporary_file(tmp_path: Path):
    path = tmp_path / "deep" / "a.txt"
    write_atomic(path, "one")
    write_atomic(path, "two")
    assert path.read_text() == "two"
    with pytest.raises(BadInput, match="already exists"):
        write_atomic(path, "three", replace=False)
    assert path.read_text() == "two"
    assert [p.name for p in path.parent.iterdir()] == ["a.txt"]
    with pytest.raises(BadInput, match="is a directory"):
        write_atomic(tmp_path, "x")


def test_read_text_errors(tmp_path: Path):
    with pytest.raises(BadInput, match="no such file"):
        read_text(tmp_path / "none", "thing")
    with pytest.raises(BadInput, match="is a directory, not a thing"):
        read_text(tmp_path, "thing")
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(BadInput, match="cannot read it"):
        read_text(tmp_path / "bin", "thing")


# --- the output rule, for every command that writes a file the user names -----------------

# Each command with {o} where the output goes ({o} a folder where the command takes one, the file
# then `inside` it), and whether it can run to the end here (no GPU, no git): those also show that
# --overwrite replaces a regular file. The others are refused before any work, which is what counts.
OUTPUTS = {
    "compare --out-markdown": (["compare", "{r}", "{r}", "--thresholds", "{t}", "--out-markdown", "{o}"], "", True),
    "compare --out-json": (["compare", "{r}", "{r}", "--thresholds", "{t}", "--out-json", "{o}"], "", True),
    "export --out": (["export", "{r}", "--out", "{o}"], "", True),
    "history --out-steps": (["history", "--store", "{s}", "--check", "--out-steps", "{o}"], "", True),
    "history --out-html": (["history", "--store", "{s}", "--out-html", "{o}"], "index.html", True),
    "run --out": (["run", "--project", "{p}", "--out", "{o}"], "", False),
    "ab --out-dir": (["ab", "HEAD", "--project", "{p}", "--out-dir", "{o}"], "comparison.json", False),
    "selftest --out": (["selftest", "--project", "{p}", "--out", "{o}"], "", False),
    "bisect --out-markdown": (
        ["bisect", "--repo", "{p}", "--good", "a", "--bad", "b", "--measure", "true", "--out-markdown", "{o}"],
        "",
        False,
    ),
    "bisect --out-json": (
        ["bisect", "--repo", "{p}", "--good", "a", "--bad", "b", "--measure", "true", "--out-json", "{o}"],
        "",
        False,
    ),
}


def _output_run(name: str, project: Path, tmp_path: Path, place, overwrite: bool):
    """Run the command with `place(target)` having put something at its output's name."""
    from click.testing import CliRunner

    from perfbot.cli import perfbot
    from perfbot.records import results
    from tests.conftest import ROOT
    from tests.helpers import make_results

    args, inside, _ = OUTPUTS[name]
    run, store, out = tmp_path / "r.json", tmp_path / "store", tmp_path / "out"
    results.save(make_results(seed=1), run)
    if name.startswith("history"):
        assert CliRunner().invoke(perfbot, ["baseline", "update", str(run), "--store", str(store)]).exit_code == 0
    target = out / inside if inside else out
    target.parent.mkdir(parents=True, exist_ok=True)
    place(target)
    values = {"r": run, "t": ROOT / "thresholds.yaml", "o": out, "s": store, "p": project}
    argv = [a.format(**values) for a in args] + (["--overwrite"] if overwrite else [])
    return CliRunner().invoke(perfbot, argv), target


SPECIAL = {
    "a fifo": (lambda t: os.mkfifo(t), "is a fifo", stat.S_ISFIFO),
    "a symlink to a fifo": (
        lambda t: (os.mkfifo(f"{t}.fifo"), t.symlink_to(f"{t}.fifo")),
        "is a symlink to a fifo",
        stat.S_ISFIFO,
    ),
    "a symlink to a character device": (
        lambda t: t.symlink_to(os.devnull),
        "is a symlink to a character device",
        stat.S_ISCHR,
    ),
    "a socket": (lambda t: socket.socket(socket.AF_UNIX).bind(str(t)), "is a socket", stat.S_ISSOCK),
}


@pytest.mark.parametrize("special", sorted(SPECIAL))
@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_an_output_is_never_put_in_place_of_anything_but_a_regular_file(
    project: Path, tmp_path: Path, name: str, special: str
):
    place, words, still = SPECIAL[special]
    if special == "a socket" and len(str(tmp_path)) > 80:
        pytest.skip("a unix socket's path is limited to 108 bytes")
    result, target = _output_run(name, project, tmp_path, place, overwrite=True)
    assert result.exit_code == 2, result.output
    assert f"{target}: {words}; perfbot writes only regular files" in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert still(os.stat(target).st_mode)  # left where it was, with --overwrite too
    assert special.startswith("a symlink") == target.is_symlink()


@pytest.mark.parametrize("name", sorted(OUTPUTS))
def test_an_existing_output_is_kept_without_overwrite(project: Path, tmp_path: Path, name: str):
    result, target = _output_run(name, project, tmp_path, lambda t: t.write_text("precious"), overwrite=False)
    assert result.exit_code == 2, result.output
    assert f"{target}: already exists; choose another name or pass --overwrite" in result.stderr
    assert target.read_text() == "precious"
    linked, target = _output_run(name, project, tmp_path / "l", _link_to_precious, overwrite=False)
    assert linked.exit_code == 2 and "already exists" in linked.stderr, linked.output
    assert target.is_symlink() and target.read_text() == "precious"


def _link_to_precious(target: Path) -> None:
    (target.parent / "precious.txt").write_text("precious")
    target.symlink_to(target.parent / "precious.txt")


@pytest.mark.parametrize("name", sorted(n for n, (_, _, runs) in OUTPUTS.items() if runs))
def test_overwrite_replaces_a_file_and_a_link_itself_never_its_target(project: Path, tmp_path: Path, name: str):
    result, target = _output_run(name, project, tmp_path, lambda t: t.write_text("old"), overwrite=True)
    assert result.exit_code == 0, result.output
    assert target.read_text() != "old" and not target.is_symlink()
    linked, target = _output_run(name, project, tmp_path / "l", _link_to_precious, overwrite=True)
    assert linked.exit_code == 0, linked.output
    assert not target.is_symlink() and target.read_text() != "precious"
    assert (target.parent / "precious.txt").read_text() == "precious"  # never written through


def test_check_output_follows_the_rule(tmp_path: Path):
    from perfbot.files import check_output

    free, file, dangling = tmp_path / "free", tmp_path / "file", tmp_path / "dangling"
    file.write_text("x")
    dangling.symlink_to(tmp_path / "nowhere")
    check_output(free, overwrite=False)
    check_output(file, overwrite=True)
    check_output(dangling, overwrite=True)
    for taken in (file, dangling):  # a dangling link is a name taken too
        with pytest.raises(BadInput, match="already exists"):
            check_output(taken, overwrite=False)
    with pytest.raises(BadInput, match="is a directory"):
        check_output(tmp_path, overwrite=True)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(BadInput, match="not a place a file can be written"):
        check_output(loop, overwrite=True)


def test_own_state_files_are_replaced_but_never_over_a_fifo(tmp_path: Path):
    state = tmp_path / "state.json"
    write_atomic(state, "one")
    write_atomic(state, "two")  # perfbot's own files replace themselves
    assert state.read_text() == "two"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(BadInput, match="is a fifo"):
        write_atomic(tmp_path / "fifo", "x")
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)


# --- inputs: only regular files are read ---------------------------------------------------

# Each command with {f} where a fifo stands for one file it reads; run as the real CLI in a
# process with a timeout, so that a read that blocks fails the test instead of hanging it.
FIFO_INPUTS = {
    "show": ["show", "{f}"],
    "compare RESULTS": ["compare", "{f}", "{r}", "--thresholds", "{t}"],
    "compare --thresholds": ["compare", "{r}", "{r}", "--thresholds", "{f}"],
    "bisect --state": [
        "bisect",
        "--repo",
        "{g}",
        "--good",
        "{good}",
        "--bad",
        "{bad}",
        "--measure",
        "true",
        "--state",
        "{f}",
    ],
    "history --check --state": ["history", "--store", "{s}", "--check", "--state", "{f}"],
}


@pytest.mark.parametrize("name", quick_first(2, sorted(FIFO_INPUTS)))
def test_an_input_that_is_a_fifo_is_refused_not_waited_for(tmp_path: Path, name: str):
    import subprocess
    import sys

    from perfbot.records import results
    from tests.conftest import ROOT
    from tests.helpers import make_results
    from tests.step_repo import repository

    run, store, fifo = tmp_path / "r.json", tmp_path / "store", tmp_path / "fifo"
    results.save(make_results(seed=1), run)
    values = {"r": run, "t": ROOT / "thresholds.yaml", "s": store, "f": fifo, "g": tmp_path / "repo"}
    if name.startswith("bisect"):
        values["good"], values["bad"] = repository(tmp_path / "repo", [1.0, 2.0])
    if name.startswith("history"):
        cli = [sys.executable, "-m", "perfbot", "baseline", "update", str(run), "--store", str(store)]
        assert subprocess.run(cli, cwd=ROOT, capture_output=True, timeout=60).returncode == 0
    os.mkfifo(fifo)
    argv = [a.format(**values) for a in FIFO_INPUTS[name]]
    done = subprocess.run(
        [sys.executable, "-m", "perfbot", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"perfbot: error: {fifo}: is a fifo, not a "), done.stderr
    assert "perfbot reads only regular files" in done.stderr and done.stderr.count("\n") == 1
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # never written over either


def test_read_text_refuses_what_is_not_a_regular_file(tmp_path: Path):
    from perfbot.records.schema import read_limited

    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "link").symlink_to(tmp_path / "fifo")
    for path in (tmp_path / "fifo", tmp_path / "link"):
        with pytest.raises(BadInput, match="is a fifo, not a thing; perfbot reads only regular files"):
            read_text(path, "thing")
        with pytest.raises(BadInput, match="is a fifo, not a thing"):
            read_limited(path, "thing", 100)
    with pytest.raises(BadInput, match="is a character device, not a thing"):
        read_text(Path(os.devnull), "thing")
    with pytest.raises(BadInput, match="cannot read it: File name too long"):
        read_text(tmp_path / ("q" * 100_000), "thing")


@pytest.mark.parametrize(
    "argv",
    [["history", "--store", "{s}", "--out-html", "{o}"], ["export", "{r}", "--out", "{o}/r.json"]],
    ids=["history --html", "export --out"],
)
def test_an_output_folder_that_is_a_dangling_symlink_is_named_as_one(tmp_path: Path, argv: list[str]):
    from click.testing import CliRunner

    from perfbot.cli import perfbot
    from perfbot.records import results
    from tests.helpers import make_results

    run, store, out = tmp_path / "r.json", tmp_path / "store", tmp_path / "out"
    results.save(make_results(seed=1), run)
    assert CliRunner().invoke(perfbot, ["baseline", "update", str(run), "--store", str(store)]).exit_code == 0
    out.symlink_to(tmp_path / "nowhere")
    done = CliRunner().invoke(perfbot, [a.format(r=run, s=store, o=out) for a in argv])
    assert done.exit_code == 2, done.output
    assert done.stderr.endswith(f": cannot make its folder: {out} is a symlink that leads nowhere, not a folder\n")
    assert done.stderr.count("\n") == 1 and not (tmp_path / "nowhere").exists()


def test_an_output_inside_a_missing_folder_makes_the_folder(tmp_path: Path):
    write_atomic(tmp_path / "new" / "deep" / "a.txt", "x")
    assert (tmp_path / "new" / "deep" / "a.txt").read_text() == "x"
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput, match=r"a.txt: is not a place .*\(.*/file is a file, not a folder\)"):
        write_atomic(tmp_path / "file" / "deep" / "a.txt", "x")


# --- the containment rule: paths perfbot chooses inside a folder -------------------------------


def _snapshot(top: Path) -> dict[str, object]:
    """Everything under `top`, links not followed: each folder, each link's target, each file's bytes."""
    found: dict[str, object] = {}
    for folder, folders, files in os.walk(top):
        for name in folders + files:
            path = Path(folder) / name
            key = str(path.relative_to(top))
            if path.is_symlink():
                found[key] = ("link", os.readlink(path))
            elif path.is_dir():
                found[key] = "folder"
            else:
                found[key] = path.read_bytes()
    return found


@pytest.fixture
def place(tmp_path: Path) -> tuple[Path, Path]:
    """A folder perfbot writes in, and a folder outside it holding a file to keep."""
    inside, outside = tmp_path / "project", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    (outside / "precious").write_text("precious")
    return inside, outside


def test_a_link_on_the_way_out_of_the_folder_is_refused_naming_it(place: tuple[Path, Path]):
    from perfbot.files import Inside, write_all

    root, outside = place
    (root / "perf").symlink_to(outside)
    before = _snapshot(outside)
    target = root / "perf" / "deep" / "a.txt"
    with pytest.raises(BadInput) as refused:
        Inside(root, "the project").check(target)
    assert str(refused.value) == (
        f"{target}: {root / 'perf'} is a symlink to {outside}, outside the project ({root}); "
        "perfbot writes only inside it"
    )
    with pytest.raises(BadInput, match="outside the project"):  # writing checks it again
        write_all({root / "mine.txt": "x", target: "x"}, inside=Inside(root, "the project"))
    assert _snapshot(outside) == before and not (root / "mine.txt").exists()
    write_all({target: "x"})  # without the rule, the user's own path: written where it leads
    assert (outside / "deep" / "a.txt").read_text() == "x"


def test_a_link_deeper_on_the_way_is_followed_from_where_the_one_before_led(place: tuple[Path, Path]):
    from perfbot.files import Inside

    root, outside = place
    (root / "real").mkdir()
    (root / "a").symlink_to("real")  # inside: followed
    (root / "real" / "b").symlink_to(outside)  # then out
    with pytest.raises(BadInput, match=re.escape(f"{root / 'a' / 'b'} is a symlink to {outside}, outside the project")):
        Inside(root, "the project").check(root / "a" / "b" / "c" / "x.txt")


def test_a_link_to_a_folder_inside_is_followed_and_written_through(place: tuple[Path, Path]):
    from perfbot.files import Inside, write_all

    root, _ = place
    (root / "bench").mkdir()
    (root / "perf").symlink_to(root / "bench")
    (root / "up").symlink_to(".")  # the folder itself is inside it too
    within = Inside(root, "the project")
    within.check(root / "perf" / "new" / "a.txt")
    within.check(root / "up" / "perf" / "b.txt")
    write_all({root / "perf" / "new" / "a.txt": "x"}, inside=within)
    assert (root / "bench" / "new" / "a.txt").read_text() == "x"


@pytest.mark.parametrize("where", ["outside", "inside"])
def test_a_dangling_link_on_the_way_is_refused_wherever_it_points(place: tuple[Path, Path], where: str):
    from perfbot.files import Inside

    root, outside = place
    missing = (outside if where == "outside" else root) / "missing"
    (root / "perf").symlink_to(missing)
    with pytest.raises(BadInput) as refused:
        Inside(root, "the project").check(root / "perf" / "a.txt")
    assert str(refused.value).startswith(
        f"{root / 'perf' / 'a.txt'}: {root / 'perf'} is a symlink that leads nowhere ({missing}); "
    )
    assert not missing.exists()


def test_the_last_part_is_followed_only_when_asked(place: tuple[Path, Path]):
    from perfbot.files import Inside

    root, outside = place
    within = Inside(root, "the project")
    (root / "pyproject.toml").symlink_to(outside / "precious")
    within.check(root / "pyproject.toml")  # a file written whole replaces a link, never writes through it
    with pytest.raises(BadInput, match=r"pyproject\.toml: is a symlink to .*precious, outside the project"):
        within.check(root / "pyproject.toml", follow=True)  # appended to: written through
    (root / "own.toml").write_text("")
    (root / "linked.toml").symlink_to("own.toml")
    within.check(root / "own.toml", follow=True)  # a file at the end, not a folder: its writer's business
    within.check(root / "linked.toml", follow=True)
    assert within.holds(root / "pyproject.toml") and not within.holds(root / "pyproject.toml" / "x")


@pytest.mark.parametrize("kind", ["a file", "a symlink to a file"])
def test_a_file_on_the_way_is_named_as_what_blocks_the_folder(place: tuple[Path, Path], kind: str):
    from perfbot.files import Inside

    root, _ = place
    (root / "file").write_text("x")
    if kind != "a file":
        (root / ".github").symlink_to("file")
    blocking = root / ("file" if kind == "a file" else ".github")
    with pytest.raises(BadInput, match=re.escape(f"cannot make its folder: {blocking} is {kind}, not a folder")):
        Inside(root, "the project").check(blocking / "workflows" / "a.yml")


def test_a_loop_of_links_and_a_path_elsewhere_are_refused(place: tuple[Path, Path]):
    from perfbot.files import Inside

    root, outside = place
    (root / "loop").symlink_to("loop")
    within = Inside(root, "the store")
    with pytest.raises(BadInput, match=re.escape(f"{root / 'loop'} cannot be followed")):
        within.check(root / "loop" / "a.txt")
    with pytest.raises(BadInput, match=re.escape(f"is not inside the store, {root}")):
        within.check(outside / "a.txt")


def test_files_written_together_without_replacing_are_all_taken_back_when_one_name_is_taken(tmp_path: Path):
    from perfbot.files import write_all

    (tmp_path / "b.txt").write_text("theirs")
    with pytest.raises(BadInput, match=r"b\.txt: already exists"):
        write_all({tmp_path / "a.txt": "mine", tmp_path / "b.txt": "mine"}, replace=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.txt"] and (tmp_path / "b.txt").read_text() == "theirs"


def test_a_path_that_climbs_out_after_a_link_inside_is_refused(place: tuple[Path, Path]):
    from perfbot.files import Inside, write_all

    root, outside = place
    (root / "up").symlink_to(".")  # a link inside, to the folder itself: followed
    climbing = root / "up" / ".." / "outside" / "planted.txt"  # then ".." from the folder's real place
    before = _snapshot(outside)
    with pytest.raises(BadInput, match=re.escape(f"leads to {outside}, outside the project ({root})")):
        Inside(root, "the project").check(climbing)
    with pytest.raises(BadInput, match="outside the project"):
        write_all({climbing: "x"}, inside=Inside(root, "the project"))
    assert _snapshot(outside) == before
    Inside(root, "the project").check(root / "up" / "sub" / ".." / "kept.txt")  # ".." that stays inside


def test_files_written_together_are_taken_back_when_the_write_is_interrupted(tmp_path: Path, monkeypatch):
    from perfbot import files

    linking = os.link

    def interrupted(source, name):  # Ctrl-C as the second name is taken
        if Path(name).name == "b.txt":
            raise KeyboardInterrupt
        linking(source, name)

    monkeypatch.setattr(files.os, "link", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_all({tmp_path / "a.txt": "mine", tmp_path / "b.txt": "mine"}, replace=False)
    assert list(tmp_path.iterdir()) == []
