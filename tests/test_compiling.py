"""The compiled-kernel records on the CPU: real Triton kernels compiled for the H200 (sm_90) with
the ptxas Triton ships, through the compile-only driver, in a process without the interpreter;
their SASS read with Triton's cuobjdump and held against `ptxas -v`; and the occupancy rule."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import TypeAdapter, ValidationError

from perfbot.compiling import sass
from perfbot.compiling.occupancy import occupancy
from perfbot.errors import EnvironmentFailure
from perfbot.records.compiled import MAX_KERNELS, Compiled

# Its module-scoped fixtures (a shared Triton cache) are built once, on one pytest-xdist worker.
pytestmark = pytest.mark.xdist_group("compiling")

triton = pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[1]

KERNELS = textwrap.dedent(
    '''
    import triton
    import triton.language as tl


    @triton.jit
    def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


    @triton.jit
    def square_matmul(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
        """One BLOCK x BLOCK tile of a @ b, fp16 on the tensor cores into fp32: heavy enough in
        registers to spill under a low maxnreg."""
        rows = tl.arange(0, BLOCK)
        a = tl.load(a_ptr + rows[:, None] * BLOCK + rows[None, :])
        b = tl.load(b_ptr + rows[:, None] * BLOCK + rows[None, :])
        c = tl.dot(a, b)
        tl.store(c_ptr + rows[:, None] * BLOCK + rows[None, :], c.to(tl.float16))
    '''
)

# Run in a fresh process: the interpreter (tests/conftest.py) is chosen when a kernel is defined.
# It prints two lines: the record of the first block's launches; then one kernel compiled with
# line info and without, both records.
PROBE = textwrap.dedent(
    """
    import dataclasses, json, os, sys, torch
    from perfbot.compiling import artifacts, launches, offline
    import probe_kernels as k

    x, out = torch.zeros(4096), torch.zeros(4096)
    a = torch.zeros(128, 128, dtype=torch.float16)
    with offline.compiling_for(offline.gpu_named("NVIDIA H200")):
        with launches.recording() as seen:
            k.scale[(4,)](x, out, 4096, BLOCK=1024)
            k.scale[(4,)](x, out, 4096, BLOCK=1024)
            k.scale[(8, 2)](x, out, 4095, BLOCK=512)
            k.square_matmul[(1,)](a, a, a, BLOCK=128, num_warps=4, maxnreg=int(sys.argv[1]))
    compiled = artifacts.compiled(seen, keep_sass=True)
    assert artifacts.compiled_later(seen, keep_sass=True).result() == compiled  # read on another thread
    matmul = next(kernel for kernel, _, _ in seen.each() if kernel.name == "square_matmul")
    open(sys.argv[2] + "/matmul.cubin", "wb").write(matmul.asm["cubin"])
    open(sys.argv[2] + "/matmul.ptx", "w").write(matmul.asm["ptx"])
    print(json.dumps(dataclasses.asdict(compiled)))

    sides = []
    with offline.compiling_for(offline.gpu_named("NVIDIA H200")):
        for line_info in ("on", "off"):
            if line_info == "off":
                os.environ["TRITON_DISABLE_LINE_INFO"] = "1"  # part of Triton's cache key on disk
                k.scale.device_caches.clear()  # and compiled anew, not taken from memory
            with launches.recording() as seen:
                k.scale[(4,)](x, out, 4096, BLOCK=1024)
            sides.append(dataclasses.asdict(artifacts.compiled(seen)))
    print(json.dumps(sides))
    """
)


@dataclasses.dataclass(frozen=True)
class Probed:
    compiled: Compiled  # the first block's launches
    line_info: list[Compiled]  # one kernel with line info, then without
    where: Path  # the probe's folder: matmul.ptx and matmul.cubin are there


@pytest.fixture(scope="module")
def probed(tmp_path_factory) -> Probed:
    """PROBE run once for the module: one fresh process, whose PyTorch import costs more than
    its compiles."""
    where = tmp_path_factory.mktemp("compiled")
    (where / "probe_kernels.py").write_text(KERNELS)
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", "TRITON_DISABLE_LINE_INFO")}
    env["PYTHONPATH"] = os.pathsep.join([str(where), str(ROOT)])
    env["TRITON_CACHE_DIR"] = str(where / "cache")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "128", str(where)], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    first, sides = done.stdout.splitlines()[-2:]
    return Probed(TypeAdapter(Compiled).validate_json(first), TypeAdapter(list[Compiled]).validate_json(sides), where)


@pytest.fixture(scope="module")
def recorded(probed: Probed) -> tuple[Compiled, Path]:
    return probed.compiled, probed.where


def test_each_kernel_and_grid_is_recorded_once_with_its_launches(recorded):
    compiled, _ = recorded
    seen = [(k.name, k.grid, k.launches, k.specialization.get("BLOCK")) for k in compiled.kernels]
    assert seen == [
        ("scale", [4, 1, 1], 2, 1024),
        ("scale", [8, 2, 1], 1, 512),
        ("square_matmul", [1, 1, 1], 1, 128),
    ]
    first, second, matmul = compiled.kernels
    # Two specializations of one source: the source's digest is shared, the code's is not.
    assert first.source_sha256 == second.source_sha256 != matmul.source_sha256
    assert first.cubin_sha256 != second.cubin_sha256 and first.ptx_sha256 != second.ptx_sha256
    # n = 4096 is divisible by 16 and so specialized; 4095 is not.
    assert "n" in first.specialization["aligned"] and "n" not in second.specialization["aligned"]
    assert {"x_ptr", "out_ptr"} <= set(first.specialization["aligned"])
    assert matmul.num_warps == 4 and matmul.maxnreg == 128 and first.maxnreg is None
    assert matmul.arch == "sm_90a" and matmul.occupancy is not None and matmul.occupancy.arch == "sm_90"
    assert matmul.instructions["mma"] > 0 and first.instructions["mma"] == 0
    assert first.instructions["global_load"] > 0 and first.instructions["global_store"] > 0
    assert first.sass and "LDG" in first.sass and "/* 0x" not in first.sass


def test_spills_and_registers_are_what_ptxas_reports(recorded):
    compiled, where = recorded
    matmul = compiled.kernels[2]
    ptxas = triton.knobs.nvidia.ptxas.path
    done = subprocess.run(
        [ptxas, "-v", "--gpu-name=sm_90a", str(where / "matmul.ptx"), "-o", str(where / "again.cubin")],
        capture_output=True,
        text=True,
        check=True,
    )
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", done.stderr)
    used = re.search(r"Used (\d+) registers", done.stderr)
    assert spills and used, done.stderr
    assert int(spills.group(1)) > 0, "the probe must spill for this test to mean anything"
    assert (matmul.spill_store_bytes, matmul.spill_load_bytes) == (int(spills.group(1)), int(spills.group(2)))
    assert matmul.registers == int(used.group(1)) <= 128
    assert sass.disassemble((where / "matmul.cubin").read_bytes()).registers == matmul.registers


LISTING = """
Resource usage:
 Function k:
  REG:40 STACK:0 SHARED:1024 LOCAL:0 CONSTANT[0]:608 TEXTURE:0 SURFACE:0 SAMPLER:0

	code for sm_90a
		Function : k
        /*0000*/                   LDC R1, c[0x0][0x28] ;                                     /* 0x00000a00ff017b82 */
                                                                                              /* 0x000e300000000800 */
        /*0010*/               @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0020*/                   STL.128 [R1], R4 ;
        /*0030*/                   STL [R1+0x10], R8 ;
        /*0040*/                   LDL.LU.64 R4, [R1] ;
        /*0050*/                   STL.U8 [R1+0x14], R9 ;
        /*0060*/                   HGMMA.64x128x16.F32 R24, gdesc[UR4], RZ ;
        /*0070*/                   SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR8], RZ ;
        /*0080*/              @P1  BRA 0x60 ;
        /*0090*/                   MUFU.EX2 R3, R3 ;
        /*00a0*/                   UTMALDG.2D [UR8], [UR10] ;
        /*00b0*/                   EXIT ;
"""


def test_sass_is_counted_by_class_with_local_bytes_by_width():
    read = sass.read(LISTING)
    assert (read.registers, read.static_shared_bytes, read.arch) == (40, 1024, "sm_90a")
    assert (read.local_store_bytes, read.local_load_bytes) == (16 + 4 + 1, 8)
    counts = read.instructions
    assert counts["total"] == 12  # an encoding's second line is no instruction
    assert (counts["mma"], counts["tma"], counts["barrier"], counts["special_function"]) == (1, 1, 1, 1)
    assert (counts["global_load"], counts["local_store"], counts["local_load"], counts["branch"]) == (1, 3, 1, 2)
    assert "0x000e300000000800" not in read.sass and "HGMMA.64x128x16.F32" in read.sass
    assert counts["async_copy"] == counts["shared_load"] == 0  # a class the code lacks counts 0


def test_a_cubin_the_disassembler_cannot_read_is_an_environment_failure():
    with pytest.raises(EnvironmentFailure, match="could not read a kernel: exit"):
        sass.disassemble(b"not a cubin")


def test_a_listing_without_resource_usage_is_an_environment_failure():
    with pytest.raises(EnvironmentFailure, match="no resource usage"):
        sass.read("\tcode for sm_90a\n")


@pytest.mark.parametrize(
    ("registers", "shared", "warps", "expected"),
    [
        (64, 0, 8, (4, "registers")),  # 64 x 32 = 2048 a warp: 32 warps, 4 blocks of 8
        (65, 0, 8, (3, "registers")),  # rounded up to 72 a thread: 28 warps
        (32, 115712, 4, (2, "shared memory")),  # with the 1 KB kept per block: two fit exactly
        (32, 115713, 4, (1, "shared memory")),
        (24, 0, 16, (4, "warps")),  # 768 a warp: registers would hold 85 warps
        (16, 0, 1, (32, "blocks")),
        # Registers are given out by quarter of the SM, to whole warps: what cuda_occupancy.h gives.
        (192, 0, 1, (8, "registers")),
        (176, 0, 2, (4, "registers")),
        (144, 0, 1, (12, "registers")),
        (104, 0, 2, (8, "registers")),
    ],
)
def test_occupancy_names_its_limit(registers, shared, warps, expected):
    found = occupancy((9, 0), registers, shared, warps)
    assert found is not None and (found.blocks_per_sm, found.limited_by) == expected


def test_occupancy_of_an_unknown_gpu_is_not_guessed():
    assert occupancy((7, 5), 32, 0, 4) is None


def test_records_past_the_size_limits_are_refused(recorded):
    compiled, _ = recorded
    adapter = TypeAdapter(Compiled)
    one = dataclasses.asdict(compiled)["kernels"][0]
    with pytest.raises(ValidationError):
        adapter.validate_json(json.dumps({"kernels": [one] * (MAX_KERNELS + 1)}))
    with pytest.raises(ValidationError):
        adapter.validate_json(json.dumps({"kernels": [{**one, "cubin_sha256": "not a digest"}]}))
    assert adapter.validate_json(json.dumps({"kernels": [one] * MAX_KERNELS})).kernels[0] == compiled.kernels[0]


def test_a_run_pins_the_ptxas_and_cache_triton_chooses(monkeypatch, tmp_path):
    from perfbot.compiling import toolchain

    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    monkeypatch.setenv("TRITON_HOME", str(tmp_path))
    bundled = str(triton.knobs.nvidia.ptxas.path)
    assert toolchain.pin_toolchain() == bundled and os.environ["TRITON_PTXAS_PATH"] == bundled
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / ".triton" / "cache")
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/opt/their/ptxas")  # the user's choices stand
    monkeypatch.setenv("TRITON_CACHE_DIR", "/opt/their/cache")
    assert toolchain.pin_toolchain() == "/opt/their/ptxas" and os.environ["TRITON_PTXAS_PATH"] == "/opt/their/ptxas"
    assert os.environ["TRITON_CACHE_DIR"] == "/opt/their/cache"


@pytest.mark.slow
def test_the_same_machine_code_is_told_apart_from_line_info(probed: Probed):
    from perfbot.deciding.compiled_change import compiled_change

    with_lines, without = probed.line_info
    one, other = with_lines.kernels[0], without.kernels[0]
    # The binary names the source's lines in one and not the other; the instructions are the same.
    assert one.cubin_sha256 != other.cubin_sha256 and one.sass_sha256 == other.sass_sha256
    change = compiled_change(with_lines, without)
    assert change is not None and change.same_machine_code and change.kernels == []


def test_recorded_values_are_fit_for_the_results_file():
    from perfbot.compiling.artifacts import _value

    assert _value("a\nb\x1b") == "a b " and _value(float("-inf")) == "-inf" and _value(2.5) == 2.5


def test_a_results_file_with_unknown_instruction_classes_or_too_large_a_specialization_is_refused(recorded):
    compiled, _ = recorded
    one = dataclasses.asdict(compiled)["kernels"][0]
    adapter = TypeAdapter(Compiled)
    with pytest.raises(ValidationError, match="not an instruction class"):
        adapter.validate_json(json.dumps({"kernels": [{**one, "instructions": {"mma": 1, "<b>x</b>": 2}}]}))
    with pytest.raises(ValidationError):
        adapter.validate_json(json.dumps({"kernels": [{**one, "specialization": {f"P{i}": i for i in range(65)}}]}))


@pytest.mark.parametrize(
    ("capability", "tiny", "forty_kb", "sixteen_warps"),
    [
        # A 1-warp kernel of 16 registers stops at the blocks an SM holds; a 4-warp one of 40 KB
        # shared memory (and 1 KB kept) at its shared memory; a 16-warp one at its warps: the
        # programming guide's table.
        ((8, 0), 32, 4, 4),
        ((8, 6), 16, 2, 3),
        ((8, 9), 24, 2, 3),
        ((9, 0), 32, 5, 4),
        ((10, 0), 32, 5, 4),
        ((12, 0), 24, 2, 3),
    ],
)
def test_each_gpu_of_the_table_has_its_own_limits(capability, tiny, forty_kb, sixteen_warps):
    for (registers, shared, warps), (blocks, limit) in (
        ((16, 0, 1), (tiny, "blocks")),
        ((32, 40960, 4), (forty_kb, "shared memory")),
        ((24, 0, 16), (sixteen_warps, "warps")),
    ):
        found = occupancy(capability, registers, shared, warps)
        assert found is not None and (found.blocks_per_sm, found.limited_by) == (blocks, limit)
