"""One compiled Triton kernel (Triton's `CompiledKernel`) as perfbot records it: what it was
specialized on, its resources and occupancy, digests of its IR and binary, and its SASS counted
by class (sass.py). The same code serves a kernel that ran on a GPU and one compiled for a named
target without one (offline.py): everything is read from the compiler's output.

Reading a cubin runs cuobjdump (about half a second for a large kernel), so what is read of one
is kept for the process, by the cubin's digest: the two sides of an A/A, and each case a kernel
serves, read it once. And it is read beside the timing (`compiled_later`, a few threads): a
full-width check compiles some 34 kernels, whose reading in line would add a tenth to its time
(docs/method.md, "What recording costs").
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ..characters import blanked
from ..errors import EnvironmentFailure
from ..records.compiled import MAX_KERNELS, MAX_SASS, MAX_SPECIALIZATION, Compiled, CompiledKernel
from ..records.schema import MAX_NAME, MAX_TEXT, clean
from . import sass
from .launches import Launched
from .occupancy import occupancy

_read: dict[str, sass.Disassembly] = {}
_reading: dict[str, threading.Lock] = {}  # one reader a cubin; the others wait for its result
_readers_lock = threading.Lock()
_READERS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="perfbot-compiled")


def record(kernel: Any, grid: tuple[int, int, int], launches: int = 1, keep_sass: bool = False) -> CompiledKernel:
    """The record of a Triton `CompiledKernel` launched `launches` times on `grid`."""
    metadata = kernel.metadata
    cubin = kernel.asm["cubin"]
    digest = _sha256(cubin)
    read = _disassembly(digest, cubin, keep_sass)
    capability = _capability(metadata)
    dynamic = int(getattr(metadata, "shared", 0) or 0)
    num_warps = int(metadata.num_warps)
    source = getattr(getattr(kernel, "src", None), "fn", None)
    text = getattr(source, "src", None)
    return CompiledKernel(
        name=_name(str(kernel.name)),
        source_sha256=_sha256(text.encode()) if isinstance(text, str) else None,
        specialization=specialization(kernel),
        grid=[int(g) for g in grid],
        launches=launches,
        num_warps=num_warps,
        num_stages=int(getattr(metadata, "num_stages", 0) or 0),
        num_ctas=int(getattr(metadata, "num_ctas", 1) or 1),
        maxnreg=getattr(metadata, "maxnreg", None),
        registers=read.registers,
        spill_store_bytes=read.local_store_bytes,
        spill_load_bytes=read.local_load_bytes,
        static_shared_bytes=read.static_shared_bytes,
        dynamic_shared_bytes=dynamic,
        occupancy=occupancy(capability, read.registers, read.static_shared_bytes + dynamic, num_warps)
        if capability
        else None,
        ttgir_sha256=_sha256(str(kernel.asm.get("ttgir", "")).encode()),
        ptx_sha256=_sha256(str(kernel.asm.get("ptx", "")).encode()),
        cubin_sha256=digest,
        sass_sha256=read.code_sha256,
        instructions=dict(read.instructions),
        arch=read.arch,
        sass=read.sass[:MAX_SASS] if keep_sass else None,
    )


def specialization(kernel: Any) -> dict[str, Any]:
    """The constexprs by name (with the integer arguments Triton made constants, being 1), and
    under "aligned" the arguments it specialized as divisible by 16: from its ASTSource."""
    src = getattr(kernel, "src", None)
    names = list(getattr(getattr(src, "fn", None), "arg_names", []) or [])
    found: dict[str, Any] = {}
    for path, value in (getattr(src, "constants", None) or {}).items():
        name = _argument(names, path)
        if name is not None:
            found[name] = value if isinstance(value, bool | int | float | str) or value is None else str(value)
    aligned = []
    for path, attributes in (getattr(src, "attrs", None) or {}).items():
        name = _argument(names, path)
        for attribute in attributes or ():
            if name is not None and list(attribute) == ["tt.divisibility", 16]:
                aligned.append(name)
    # At most MAX_SPECIALIZATION entries, "aligned" among them (a kernel of more constexprs is rare).
    spec: dict[str, Any] = {_name(k): _value(v) for k, v in sorted(found.items())[: MAX_SPECIALIZATION - 1]}
    if aligned:
        spec["aligned"] = sorted(set(aligned))[:64]
    return spec


def _argument(names: list[str], path: Any) -> str | None:
    """The argument a path of Triton's ((index,) or (index, field, ...)) names."""
    if isinstance(path, str):
        return path
    if isinstance(path, tuple) and path and isinstance(path[0], int) and 0 <= path[0] < len(names):
        return names[path[0]] + "".join(f"[{p}]" for p in path[1:])
    return None


def _disassembly(digest: str, cubin: bytes, keep_sass: bool) -> sass.Disassembly:
    """The cubin read (once a process); its SASS text is kept only where a run asked for it."""
    with _readers_lock:
        gate = _reading.setdefault(digest, threading.Lock())
    with gate:
        kept = _read.get(digest)
        if kept is None or (keep_sass and not kept.sass):
            read = sass.disassemble(cubin)
            _read[digest] = read if keep_sass else dataclasses.replace(read, sass="")
            return read
    return kept


def _capability(metadata: Any) -> tuple[int, int] | None:
    target = getattr(metadata, "target", None)
    arch = getattr(target, "arch", None)
    if isinstance(arch, int) and getattr(target, "backend", "cuda") == "cuda":
        return divmod(arch, 10)
    return None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _name(text: str) -> str:
    cleaned = blanked(text).strip() or "?"
    return cleaned[:MAX_NAME]


def _value(value: Any) -> Any:
    """A constexpr's value as a record holds it: text without control characters, a float that
    is not finite as text ("-inf"), which JSON has no number for."""
    if isinstance(value, str):
        return clean(value, MAX_TEXT)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def compiled_later(launched: Launched, keep_sass: bool = False) -> Future[Compiled]:
    """`compiled`, read on another thread while the caller goes on (to time the call)."""
    return _READERS.submit(compiled, launched, keep_sass)


def compiled(launched: Launched, keep_sass: bool = False) -> Compiled:
    """The record of what one call launched (launches.py): its first MAX_KERNELS kernels, or why
    none could be read."""
    each = launched.each()
    if launched.unrecorded is not None:
        return Compiled(unrecorded=launched.unrecorded)
    try:
        kernels = [record(kernel, grid, count, keep_sass) for kernel, grid, count in each[:MAX_KERNELS]]
    except EnvironmentFailure as error:
        return Compiled(unrecorded=clean(str(error), MAX_TEXT))
    except Exception as error:  # noqa: BLE001 -- a Triton whose kernels read otherwise: said, never fatal
        return Compiled(unrecorded=clean(f"{type(error).__name__}: {error}", MAX_TEXT))
    return Compiled(kernels=kernels, more=max(len(each) - MAX_KERNELS, 0))
