"""The cheating implementations of `perfbot selftest --exploits`: each one a trick that has gamed a
kernel leaderboard in public (issue 52), written into a subject of its own beside an honest
kernel and a copy (the bytes-only bound of the roofline), as a pull request would write it.

Each subject doubles a float32 vector. `honest` launches a Triton kernel; `cheat` is the trick;
`copy` is `x.clone()`. docs/method.md ("The red-team selftest") lists each one's verdict on the
H200 and says which of perfbot's defenses catches it."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

# The kernel, the inputs, the reference and the honest implementation of every subject; the
# exploit's code goes in at {at_import} and {body}.
SUBJECT = '''"""A red-team subject of `perfbot selftest --exploits`: {title}."""
import torch
import triton
import triton.language as tl

from perfbot import Case, Subject, Suite


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    tl.store(out_ptr + i, tl.load(x_ptr + i, mask=m) * 2, mask=m)


def launch(x):
    out = torch.empty_like(x)
    _double[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
    return out


def inputs(case, generator):
    return (torch.randn(case.n, generator=generator, device=generator.device),)


def reference(x):
    return x.double() * 2


def moved(case):
    return 8 * case.n  # read once and written once, in float32


CASES = (Case("exploits", "n", {{"n": {n}}}, "float32"),)
subject = Subject(
    "red_team",
    inputs,
    reference,
    {{"float32": 1e-6}},
    bytes=moved,
    suites={{"exploits": Suite("exploits", "", ("honest", "copy", "cheat"), CASES)}},
)


@subject.implementation("honest", under_test=True)
def honest(x):
    return launch(x)


@subject.implementation("copy", bound=True, reference=lambda x: x.double())
def copy(x):
    return x.clone()


{at_import}


@subject.implementation("cheat", under_test=True)
def cheat(x):
{body}
'''


@dataclass(frozen=True)
class Exploit:
    """One trick: its name, what it does, its code (at import, and the body of `cheat(x)`), and
    whether it needs a CUDA GPU to be expressed at all."""

    name: str
    does: str
    body: str
    at_import: str = ""
    gpu_only: bool = False

    def subject(self, n: int) -> str:
        """The subject's source, its one case `n` elements long."""
        body = textwrap.indent(textwrap.dedent(self.body).strip(), "    ")
        return SUBJECT.format(title=self.does, n=n, at_import=textwrap.dedent(self.at_import).strip(), body=body)


KEPT_BY_ADDRESS = """
    kept = cheat.__dict__.setdefault("kept", {})
    if x.data_ptr() not in kept:
        kept[x.data_ptr()] = launch(x)
    return kept[x.data_ptr()]
"""

LAZY = '''
class Lazy(torch.Tensor):
    """Its values are computed when something first reads them, not when the call returns."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for arg in args:
            source = getattr(arg, "source", None)
            if isinstance(arg, Lazy) and source is not None:
                arg.source = None
                with torch._C.DisableTorchFunctionSubclass():
                    arg.copy_(launch(source))
        return super().__torch_function__(func, types, args, kwargs or {})
'''

L2_DRIVER = """
import ctypes

driver = ctypes.CDLL("libcuda.so.1")
PERSISTING_L2_LIMIT = 0x06  # CU_LIMIT_PERSISTING_L2_CACHE_SIZE
ACCESS_POLICY_WINDOW = 1  # CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW


class Window(ctypes.Structure):  # CUaccessPolicyWindow, in the 64 bytes of CUlaunchAttributeValue
    _fields_ = [
        ("base_ptr", ctypes.c_void_p),
        ("num_bytes", ctypes.c_size_t),
        ("hit_ratio", ctypes.c_float),
        ("hit_prop", ctypes.c_int),
        ("miss_prop", ctypes.c_int),
        ("pad", ctypes.c_char * 36),
    ]


MOST_SET_ASIDE = 108  # CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE

torch.zeros(1, device="cuda")  # the context, whose limit this sets
most = ctypes.c_int(0)
driver.cuDeviceGetAttribute(ctypes.byref(most), MOST_SET_ASIDE, 0)
driver.cuCtxSetLimit(PERSISTING_L2_LIMIT, ctypes.c_size_t(most.value))
"""

L2_BODY = """
    window = Window(x.data_ptr(), x.numel() * x.element_size(), 1.0, 2, 1)  # hits persist, misses stream
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    driver.cuStreamSetAttribute(stream, ACCESS_POLICY_WINDOW, ctypes.byref(window))
    return launch(x)
"""

EXPLOITS = (
    Exploit(
        "result kept across calls", "keeps its output by the input's address and returns it again", KEPT_BY_ADDRESS
    ),
    Exploit(
        "side stream",
        "launches its kernel on a stream of its own, outside the one timed",
        """
        side = cheat.__dict__.setdefault("side", torch.cuda.Stream())
        with torch.cuda.stream(side):
            out = launch(x)
        return out
        """,
        gpu_only=True,
    ),
    Exploit(
        "lazy output",
        "returns a tensor whose values are computed when they are first read",
        """
        out = torch.empty_like(x).as_subclass(Lazy)
        out.source = x
        return out
        """,
        at_import=LAZY,
    ),
    Exploit("input changed in place", "doubles its input in place and returns it", "return x.mul_(2)"),
    Exploit(
        "patched timer",
        "makes every CUDA event pair read a microsecond",
        "return launch(x)",
        at_import="torch.cuda.Event.elapsed_time = lambda self, end: 1e-3",
    ),
    Exploit(
        "patched check",
        "replaces perfbot's comparison of outputs with one that always passes",
        "return torch.zeros_like(x)",
        at_import="""
        import perfbot.measuring.correctness as correctness
        correctness.check = lambda output, expected, bound: correctness.Check(0.0, bound)
        """,
    ),
    Exploit(
        "exit at import", "ends its process, exit 0, as it is imported", "return launch(x)", "import os; os._exit(0)"
    ),
    Exploit("exit in a call", "ends its process, exit 0, when it is called", "import os; os._exit(0)"),
    Exploit(
        "shapes hard-coded",
        "keeps one output per shape of the suite's and returns it for any input of that shape",
        """
        kept = cheat.__dict__.setdefault("kept", {})
        if tuple(x.shape) not in kept:
            kept[tuple(x.shape)] = launch(x)
        return kept[tuple(x.shape)]
        """,
    ),
    Exploit(
        "L2 persistence",
        "sets aside L2 for persisting lines and marks its input persisting, so replays find it in L2",
        L2_BODY,
        at_import=L2_DRIVER,
        gpu_only=True,
    ),
    Exploit(
        "slower kernel behind a cache",
        "does the work twice, and keeps the result by the input's address",
        """
        kept = cheat.__dict__.setdefault("kept", {})
        if x.data_ptr() not in kept:
            launch(x)
            kept[x.data_ptr()] = launch(x)
        return kept[x.data_ptr()]
        """,
    ),
)
