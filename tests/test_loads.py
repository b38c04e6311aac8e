"""loads.py against Triton itself (its JIT functions built directly, as `triton.jit` builds them
off the interpreter): which kernels of a subject's package are found, and what forgetting them does."""

import sys
import types

import pytest

triton = pytest.importorskip("triton")
from triton.runtime.jit import JITFunction, KernelInterface  # noqa: E402

from perfbot.measuring import loads  # noqa: E402


def _kernel(x_ptr, n):
    pass


def _other(x_ptr):
    pass


@pytest.fixture
def package(monkeypatch):
    """A package `pkg` whose submodule defines a plain kernel and an autotuned one at module level;
    a package `pkgx` beside it (a prefix of the name, not a submodule) defines a kernel too."""
    plain, tuned, stranger = JITFunction(_kernel), JITFunction(_other), JITFunction(_kernel)
    modules = {
        "pkg": types.ModuleType("pkg"),
        "pkg.ops": types.ModuleType("pkg.ops"),
        "pkgx": types.ModuleType("pkgx"),
    }
    vars(modules["pkg.ops"]).update(plain=plain, tuned=triton.autotune(configs=[triton.Config({})], key=[])(tuned))
    vars(modules["pkg"]).update(again=plain, number=3)  # the same kernel again: found once
    vars(modules["pkgx"]).update(stranger=stranger)
    for name, module in modules.items():
        monkeypatch.setitem(sys.modules, name, module)
    return plain, tuned, stranger


def test_the_packages_kernels_are_found_under_their_wrappers(package):
    plain, tuned, stranger = package
    found = loads.triton_kernels("pkg")
    assert sorted(map(id, found)) == sorted([id(plain), id(tuned)])
    assert loads.triton_kernels("pkgx") == [stranger]
    assert loads.triton_kernels("nothing") == []


class _Hostile:
    """A subject's module-level object that exits the process when asked for any attribute."""

    @property
    def fn(self):
        raise SystemExit(0)

    def __getattr__(self, name):
        raise SystemExit(0)


class _OwnWrapper(KernelInterface):
    """A wrapper of the subject's own, on Triton's interface, whose `fn` exits the process."""

    @property
    def fn(self):
        raise SystemExit(0)


def test_the_search_runs_none_of_the_subjects_code(package, monkeypatch):
    plain, tuned, _ = package
    vars(sys.modules["pkg.ops"]).update(hostile=_Hostile(), own=_OwnWrapper())
    assert sorted(map(id, loads.triton_kernels("pkg"))) == sorted([id(plain), id(tuned)])


def test_forgotten_kernels_compile_anew_and_what_they_held_is_kept(package):
    plain, tuned, stranger = package
    compiled = object()  # what Triton keeps per device: its compiled, loaded kernels
    plain.device_caches[0] = ({"key": compiled}, {}, None, None, None)
    tuned.device_caches[0] = ({"other": compiled}, {}, None, None, None)
    stranger.device_caches[0] = ({"key": object()}, {}, None, None, None)
    held = loads.forget_compiled(loads.triton_kernels("pkg"))
    assert not plain.device_caches and not tuned.device_caches  # the next call compiles and loads
    assert sorted(map(str, held)) == sorted(  # kept alive by the caller
        map(str, [{0: ({"key": compiled}, {}, None, None, None)}, {0: ({"other": compiled}, {}, None, None, None)}])
    )
    assert stranger.device_caches  # another package's kernels are not touched
