"""provenance.py on real files: which files an implementation's code came from, and the one-line
refusals of an A/B whose sides did not each run their own checkout's code."""

from __future__ import annotations

import hashlib
import importlib
import sys
import textwrap
from pathlib import Path

import pytest

from perfbot.errors import BadInput
from perfbot.loading import provenance
from perfbot.loading.provenance import Source, Sources

MODULES = {
    "root/proj/__init__.py": "",
    "root/proj/b.py": "def g(x):\n    return x\n",
    "root/proj/c.py": "def h(x):\n    return x\n",
    "root/proj/d.py": """
        import triton

        def _k(x_ptr):
            pass

        kernel = triton.autotune(configs=[triton.Config({})], key=[])(triton.jit(_k))
        """,
    "root/proj/e.py": """
        class Op:
            @staticmethod
            def forward(x):
                return x
        """,
    "root/proj/f.py": "def p(x, y):\n    return x\n",
    "root/proj/g.py": "from other.deco import deco\n\n@deco\ndef w(x):\n    return x\n",
    "root/proj/a.py": """
        import functools

        import torch

        from other.x import third
        from ownpkg.y import mine
        from proj import b
        from proj.c import h
        from proj.d import kernel
        from proj.e import Op
        from proj.f import p
        from proj.g import w


        class _Hostile:
            @property
            def fn(self):
                raise SystemExit(0)

            def __getattr__(self, name):
                raise SystemExit(0)


        def make():
            local = h

            def fn(x):
                return local(x)

            return fn


        closure = make()
        partial = functools.partial(p, y=1)
        hostile = _Hostile()


        def f(x):
            return b.g(x), closure(x), kernel, Op.forward(x), partial(x), w(x), third(x), mine(x), torch.relu, hostile
        """,
    # Installed packages: a third party's (not followed) and the project's own (followed).
    "lib/site-packages/other/__init__.py": "",
    "lib/site-packages/other/x.py": "def third(x):\n    return x\n",
    "lib/site-packages/other/deco.py": """
        import functools

        def deco(fn):
            @functools.wraps(fn)
            def inner(*args):
                return fn(*args)

            return inner
        """,
    "lib/site-packages/ownpkg/__init__.py": "",
    "lib/site-packages/ownpkg/y.py": "def mine(x):\n    return x\n",
}


@pytest.fixture
def written(tmp_path: Path, monkeypatch) -> Path:
    for name, text in MODULES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path / "lib" / "site-packages"))
    monkeypatch.syspath_prepend(str(tmp_path / "root"))
    yield tmp_path
    for name in [n for n in sys.modules if n.partition(".")[0] in ("proj", "other", "ownpkg")]:
        del sys.modules[name]


def test_the_files_reached_from_an_implementation(written: Path):
    pytest.importorskip("triton")
    f = importlib.import_module("proj.a").f
    sources = provenance.of(written / "root", {"mine": f}, project={"proj", "ownpkg"})
    recorded = sources.recorded()["mine"]
    y = str((written / "lib/site-packages/ownpkg/y.py").resolve())
    # Through a module's attribute, a closure, autotune(jit()), a class's static method, a
    # partial, a decorator's __wrapped__; the project's own package though it is installed; not
    # the third party's package, nor PyTorch, nor the standard library.
    init = str((written / "lib/site-packages/ownpkg/__init__.py").resolve())
    # ... and the __init__.py of each package a module was imported through.
    assert set(recorded) == {f"proj/{m}.py" for m in "abcdefg"} | {"proj/__init__.py", y, init}
    assert recorded["proj/b.py"] == hashlib.sha256((written / "root/proj/b.py").read_bytes()).hexdigest()
    assert {s.module for s in sources.files["mine"]} >= {"proj.a", "proj.d", "ownpkg.y"}


def _source(path: Path, module: str) -> Source:
    return Source(path.resolve(), module, hashlib.sha256(path.read_bytes()).hexdigest())


def _checkouts(tmp_path: Path, base_kernel: str = "x = 1\n", head_kernel: str = "x = 2\n") -> tuple[Path, Path]:
    for side, text in (("base", base_kernel), ("head", head_kernel)):
        (tmp_path / side / "src" / "pkg" / "ops").mkdir(parents=True)
        (tmp_path / side / "src" / "pkg" / "ops" / "k.py").write_text(text)
    return (tmp_path / "base").resolve(), (tmp_path / "head").resolve()


def _installed(tmp_path: Path, text: str) -> Path:
    installed = tmp_path / "site-packages" / "pkg" / "ops" / "k.py"
    installed.parent.mkdir(parents=True)
    installed.write_text(text)
    return installed


def _sides(base_root: Path, base: Path, head_root: Path, head: Path) -> dict[str, Sources]:
    return {
        "base": Sources(base_root, {"triton": (_source(base, "pkg.ops.k"),)}),
        "head": Sources(head_root, {"triton": (_source(head, "pkg.ops.k"),)}),
    }


def _refused(sides: dict[str, Sources]) -> str:
    with pytest.raises(BadInput) as error:
        provenance.check(sides)
    assert "\n" not in str(error.value)
    return str(error.value)


def test_each_side_running_its_own_files_passes(tmp_path: Path):
    base, head = _checkouts(tmp_path)
    provenance.check(_sides(base, base / "src/pkg/ops/k.py", head, head / "src/pkg/ops/k.py"))


def test_one_file_both_sides_ran_is_refused_where_the_checkouts_differ(tmp_path: Path):
    base, head = _checkouts(tmp_path)
    installed = _installed(tmp_path, "x = 2\n")  # the head's, installed
    message = _refused(_sides(base, installed, head, installed))
    assert message.startswith(
        f"implementation 'triton': both sides ran {installed.resolve()}, but the checkouts differ in src/pkg/ops/k.py"
    )


def test_one_file_both_sides_ran_passes_where_the_checkouts_agree(tmp_path: Path):
    base, head = _checkouts(tmp_path, "x = 1\n", "x = 1\n")
    installed = _installed(tmp_path, "x = 1\n")  # the same code everywhere: an A/A of it is right
    provenance.check(_sides(base, installed, head, installed))


def test_a_file_of_the_other_sides_checkout_is_refused(tmp_path: Path):
    base, head = _checkouts(tmp_path, "x = 1\n", "x = 1\n")  # the same code: only the place is wrong
    kernel = head / "src/pkg/ops/k.py"
    message = _refused(_sides(base, kernel, head, kernel))
    assert message.startswith(f"implementation 'triton' of the base side ran {kernel}, a file of the head side's")


def test_a_checkout_inside_the_other_runs_its_own_files(tmp_path: Path):
    head = tmp_path.resolve()
    (head / "src" / "pkg" / "ops").mkdir(parents=True)
    (head / "src" / "pkg" / "ops" / "k.py").write_text("x = 2\n")
    base = head / "scratch" / "base"  # a worktree made inside the head's checkout
    (base / "src" / "pkg" / "ops").mkdir(parents=True)
    (base / "src" / "pkg" / "ops" / "k.py").write_text("x = 1\n")
    provenance.check(_sides(base, base / "src/pkg/ops/k.py", head, head / "src/pkg/ops/k.py"))


def test_an_installed_copy_that_differs_from_the_checkouts_is_refused(tmp_path: Path):
    base, head = _checkouts(tmp_path)
    stale = _installed(tmp_path, "x = 0\n")  # an older install the base side found instead of its own
    message = _refused(_sides(base, stale, head, head / "src/pkg/ops/k.py"))
    assert message.startswith(
        f"implementation 'triton' of the base side ran {stale.resolve()}, not its checkout's src/pkg/ops/k.py"
    )


def test_an_installed_copy_equal_to_the_checkouts_passes(tmp_path: Path):
    base, head = _checkouts(tmp_path)
    same = _installed(tmp_path, "x = 1\n")  # the base's code, installed: the base side ran its own code
    provenance.check(_sides(base, same, head, head / "src/pkg/ops/k.py"))
