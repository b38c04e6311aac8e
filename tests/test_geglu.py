"""The fused kernel against a float64 reference. On CPU this runs in Triton's interpreter
(fp16 and fp32: its bf16 dot is wrong); bf16 and the compiled kernel run under the gpu marker."""

import math
import os
import runpy
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from kernels.geglu import _gelu, geglu, launch_plan

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"

# (dtype, largest relative error): the precision the kernel promises; one rounding of the
# output (fp16 2^-11, bf16 2^-8 relative) after fp32 accumulation lands near a third of these.
TOLERANCES = [(torch.float16, 5e-4), (torch.float32, 1e-5)]
GPU_TOLERANCES = [*TOLERANCES, (torch.bfloat16, 0.003)]

SHAPES = [  # (batch dims, K, N): odd sizes, below and above one block, and a lone row
    ((1,), 16, 16),
    ((9,), 41, 17),
    ((130,), 341, 70),
    ((3, 5), 64, 129),
    ((2, 3, 7), 100, 33),
    ((257,), 72, 200),
]


def reference(x: torch.Tensor, weight: torch.Tensor, approximate: str) -> torch.Tensor:
    z1, z2 = (x.double() @ weight.double().T).chunk(2, dim=-1)
    return z1 * F.gelu(z2, approximate=approximate)


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    return ((out.double() - ref).norm() / ref.norm()).item()


def make_inputs(batch, K, N, dtype, device=DEVICE, seed=0):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(*batch, K, generator=generator).to(dtype).to(device)
    weight = (torch.randn(2 * N, K, generator=generator) / K**0.5).to(dtype).to(device)
    return x, weight


def _check(batch, K, N, dtype, bound, approximate, device=DEVICE, path=None, config=None):
    """geglu's out against float64 within the fused kernels' `bound`; where the plan sends the
    shape to the epilogue path instead (on a GPU), against eager's precision (_check_as_eager)."""
    x, weight = make_inputs(batch, K, N, dtype, device, seed=K * N)
    if path is None and config is None and launch_plan(x, weight)["path"] == "epilogue":
        return _check_as_eager(batch, K, N, dtype, approximate, device, path=None)
    # Poisoned output: every element must be written.
    out = torch.full((*batch, N), float("nan"), dtype=dtype, device=device)
    result = geglu(x, weight, approximate=approximate, out=out, path=path, config=config)
    assert result is out
    assert result.shape == (*batch, N)
    assert torch.isfinite(result).all()
    assert relative_error(result, reference(x, weight, approximate)) <= bound


needs_interpreter = pytest.mark.skipif(not INTERPRETED, reason="interpreter tests run where there is no GPU")


@needs_interpreter
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype,bound", TOLERANCES)
@pytest.mark.parametrize("batch,K,N", SHAPES)
def test_matches_float64_reference_in_interpreter(batch, K, N, dtype, bound, approximate):
    _check(batch, K, N, dtype, bound, approximate)


TMA_SHAPES = [((9,), 40, 24), ((130,), 344, 72), ((2, 100), 64, 136), ((1,), 8, 8)]  # K, N multiples of 8
TMA_CONFIGS = [  # small blocks so the persistent loop walks several tiles per program
    {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32},
    {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 16, "epilogue_subtile": True},
    {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32, "one_dot": True},
    {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 16, "one_dot": True, "epilogue_subtile": True},
    {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 16, "flatten": True},
    {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 32, "one_dot": True, "epilogue_subtile": True, "flatten": True},
    {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "one_dot": True, "flatten": True, "programs_per_sm": 2},
]


def _tma_params() -> list:
    """Every shape, config and GELU; in the inner loop each config once, on a shape and a GELU
    taken in turn (a quick sibling of the whole product, which the slow tier runs)."""
    params = []
    for i, config in enumerate(TMA_CONFIGS):
        name = "-".join(f"{k}{v}" for k, v in config.items())
        for j, shape in enumerate(TMA_SHAPES):
            for approximate in ("none", "tanh"):
                quick = j == i % len(TMA_SHAPES) and approximate == ("none", "tanh")[i % 2]
                params.append(
                    pytest.param(
                        *shape,
                        config,
                        approximate,
                        id=f"{shape}-{name}-{approximate}",
                        marks=() if quick else pytest.mark.slow,
                    )
                )
    return params


@needs_interpreter
@pytest.mark.parametrize("batch,K,N,config,approximate", _tma_params())
def test_tma_path_in_interpreter(batch, K, N, config, approximate):
    _check(batch, K, N, torch.float16, 5e-4, approximate, path="tma", config=config)


@needs_interpreter
def test_rows_padded_or_copied_to_32_byte_alignment_give_the_same_result(monkeypatch):
    from kernels import geglu as geglu_module

    # K = 40: rows of 80 bytes, 16-byte but not 32-byte aligned. Many rows copy x into aligned
    # rows; a weight stored in a wider buffer (rows of 48) is read through its stride.
    copies = []
    real = geglu_module._aligned_rows
    monkeypatch.setattr(geglu_module, "_aligned_rows", lambda x2d: copies.append(x2d.shape) or real(x2d))
    monkeypatch.setattr(geglu_module, "ALIGN_ROWS_FROM", 100)  # the interpreter's shapes are small
    x, weight = make_inputs((130,), 40, 24, torch.float16)
    wide = torch.zeros(48, 48, dtype=torch.float16)
    wide[:, :40] = weight
    padded_weight = wide[:, :40]
    assert padded_weight.stride(0) == 48
    for w in (weight, padded_weight):
        for one_dot in (True, False):
            config = {"BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 16, "one_dot": one_dot}
            out = geglu(x, w, path="tma", config=config)
            assert relative_error(out, reference(x, weight, "none")) <= 5e-4
    assert copies == [(130, 40)] * 4
    geglu(x[:99], weight, path="tma")  # fewer rows: the weight's reads dominate, x is not copied
    assert len(copies) == 4


@pytest.fixture
def h200(monkeypatch):
    """geglu sees an H200 (132 SMs, TMA) while the kernels still run in the interpreter."""
    from kernels import geglu as geglu_module

    monkeypatch.setattr(geglu_module, "_device_info", lambda device: ("NVIDIA H200", 132, True))


def _plan(M, K, N, path=None, stand_in=False):
    """The plan's record for a bf16 M x K -> N; by default the fused launch's, even where the
    epilogue path would stand in for it (test_the_epilogue_path_stands_in_where_fused_would_lose)."""
    from kernels import geglu as geglu_module

    x = torch.empty(M, K, dtype=torch.bfloat16, device="meta")
    weight = torch.empty(2 * N, K, dtype=torch.bfloat16, device="meta")
    return geglu_module.plan_for(x, weight, path, stand_in=stand_in).record()


@needs_interpreter
def test_the_h200_plans_decode_and_prefill_by_waves(h200):
    decode = _plan(8, 4096, 11008)
    assert (decode["source"], decode["BLOCK_M"], decode["BLOCK_N"], decode["programs_per_sm"]) == (
        "by waves",
        16,
        32,
        3,
    )
    assert _plan(278, 5120, 13824)["BLOCK_M"] == 64  # 384 padded rows in 128-row tiles, 320 in 64
    assert _plan(278, 5112, 13824)["BLOCK_M"] == 128  # rows not 32-byte aligned: 64-row tiles lost there
    assert _plan(2000, 5120, 13824)["BLOCK_M"] == 128  # past the rows where 64-row tiles were measured
    assert _plan(4096, 8168, 4096).get("align_x") and not _plan(4096, 8192, 4096).get("align_x")
    assert not _plan(64, 8168, 4096).get("align_x")  # few rows: the weight's reads dominate


SIZES = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"]
OPTIONS = [
    "warp_specialize",
    "epilogue_subtile",
    "one_dot",
    "flatten",
    "programs_per_sm",
    "maxnreg",
    "num_ctas",
    "split_k",
]


@needs_interpreter
def test_a_plan_records_the_options_its_config_names_and_no_others(h200):
    # Results hold the record (the subject's config=launch_plan) and a run names each key whose
    # value differs from the baseline's: an option recorded where it was not before would read as
    # a changed config. A tuned config records the options tuned_configs.yaml gives it...
    from kernels import configs

    where = {"path": "tma", "gpu": "NVIDIA H200", "num_sms": 132}
    tuned = configs.tuned_table()["NVIDIA H200"]["tma"]["large"]
    assert not {"programs_per_sm", "maxnreg", "split_k"} & set(tuned)
    assert _plan(8192, 4096, 4096) == {**where, "shape_class": "large", **tuned, "source": "tuned"}
    # ...fp32's fixed one none of them...
    fixed = launch_plan(*(torch.empty(shape, device="meta") for shape in ((300, 64), (80, 64))))
    assert list(fixed) == ["path", "gpu", "shape_class", "num_sms", *SIZES, "source"]
    # ...and one chosen by waves every one, maxnreg's None too.
    decode = _plan(8, 4096, 11008)
    assert list(decode) == ["path", "gpu", "shape_class", "num_sms", *SIZES, *OPTIONS, "source"]
    assert decode["maxnreg"] is None and (decode["programs_per_sm"], decode["split_k"]) == (3, 1)


@needs_interpreter
@pytest.mark.parametrize("batch,K,N,split_k", [((5,), 64, 40, 1), ((33,), 72, 200, 1), ((5,), 2104, 200, 2)])
def test_a_by_waves_plan_runs_right(h200, batch, K, N, split_k):
    x, weight = make_inputs(batch, K, N, torch.float16)
    plan = launch_plan(x, weight, path="tma")  # the fused launch, where the epilogue path would stand in
    assert (plan["source"], plan["split_k"]) == ("by waves", split_k)  # 2104: 4 tiles, 17 K steps
    assert relative_error(geglu(x, weight, path="tma"), reference(x, weight, "none")) <= 5e-4


@needs_interpreter
def test_broadcast_rows_and_an_unaligned_out_are_handled(h200):
    x, weight = make_inputs((1,), 64, 24, torch.float16)
    broadcast = x.expand(8, 64)  # rows of stride 0 overlap: not for TMA
    assert launch_plan(broadcast, weight)["path"] == "pointer"
    assert relative_error(geglu(broadcast, weight), reference(broadcast, weight, "none")) <= 5e-4
    shifted = torch.empty(8 * 24 + 1, dtype=torch.float16)[1:].view(8, 24)  # base 2 bytes past alignment
    x8, _ = make_inputs((8,), 64, 24, torch.float16)
    geglu(x8, weight, out=shifted, path="tma")
    assert relative_error(shifted, reference(x8, weight, "none")) <= 5e-4


def test_decode_is_chosen_by_the_waves_of_resident_programs():
    from kernels import configs

    def chosen(block_m, N):
        c = configs.decode_by_waves(block_m, N, 132)
        return c["BLOCK_N"], c["num_stages"], c["programs_per_sm"]

    # N = 11008: 64-wide tiles with one program per SM are 1.3 waves; 32-wide, three per SM, one.
    assert chosen(16, 11008) == (32, 3, 3)
    assert chosen(16, 14336) == (128, 3, 1)  # 112 tiles in one wave, the widest
    assert chosen(64, 24576) == (64, 4, 1)  # 64 rows: only one of the smaller configs fits an SM
    for block_m in (16, 32, 64):
        for N in range(1024, 40000, 997):
            config = configs.decode_by_waves(block_m, N, 132)
            smem = configs._smem_bytes({**config, "BLOCK_M": block_m})
            assert smem * config["programs_per_sm"] <= configs.SM_SMEM_BYTES


def test_prefill_takes_64_row_tiles_only_where_they_fill_the_gpu_better():
    from kernels import configs

    # M = 278 pads to 384 rows in 128-row blocks, 320 in 64-row ones; M = 107 fills 64 of 132 SMs.
    assert configs.prefill_by_waves(278, 13824, 132)["BLOCK_M"] == 64
    assert configs.prefill_by_waves(107, 8192, 132)["BLOCK_M"] == 64
    for M, N in ((8192, 5120), (512, 16384), (198, 14336), (4096, 4096)):  # the suites' shapes and a tie
        assert configs.prefill_by_waves(M, N, 132) is None


def test_prefill_puts_up_to_16_row_blocks_in_one_group():
    from kernels import configs

    assert configs.one_group(512, 64, 8) == 8  # 8 row blocks: one group of 8 already
    assert configs.one_group(522, 64, 8) == 9  # 9: were it 8, the ninth would read weight again
    assert configs.one_group(1024, 64, 8) == 16
    assert configs.one_group(1025, 64, 8) == 8  # 17: past what was measured
    assert configs.one_group(522, 64, 16) == 16  # a larger tuned group stays


@needs_interpreter
def test_the_h200_prefill_plans_group_their_row_blocks(h200):
    from kernels import geglu as geglu_module

    grouped = _plan(522, 5120, 13824)
    assert (grouped["GROUP_M"], grouped["one_group"]) == (9, True)  # 64-row tiles, 9 row blocks
    assert _plan(1334, 5168, 9800)["GROUP_M"] == 11  # 128-row tiles, 11 row blocks
    for M, K, N, tuned_group_m in [
        (8192, 4096, 4096, 8),  # the tuned config's, past 16 row blocks
        (522, 5112, 13824, 8),  # rows not 32-byte aligned: not measured there
        (21, 3568, 2424, 1),  # decode: one block of rows
    ]:
        plan = _plan(M, K, N)
        assert (plan["GROUP_M"], "one_group" in plan) == (tuned_group_m, False)
    # A config given by hand sets GROUP_M itself: the plan no longer says "one group".
    by_hand = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 4}
    x = torch.empty(522, 5120, dtype=torch.bfloat16, device="meta")
    typed = geglu_module.plan_for(x, torch.empty(2 * 13824, 5120, dtype=torch.bfloat16, device="meta"), stand_in=False)
    assert typed.one_group and typed.record() == grouped
    given = geglu_module._with_config(typed, by_hand, 522, "given")
    assert given.config.GROUP_M == 4 and not given.one_group and "one_group" not in given.record()


def test_the_unfused_path_is_predicted_to_win_only_inside_each_rules_bounds():
    from kernels import configs
    from kernels import geglu as geglu_module

    def reason(M, K, N, plan_class="large", block_m=128, block_n=128, aligned=True):
        return configs.unfused_reason(M, K, N, plan_class, block_m, block_n, 132, aligned)

    # Weight rows that are not 32-byte aligned, from 17 rows up to where x is realigned.
    assert [reason(M, 3000, 7000, aligned=False) for M in (16, 17, 1023, 1024)] == [
        None,
        "weight rows misaligned",
        "weight rows misaligned",
        None,
    ]
    assert reason(513, 3008, 7000) is None  # the same shape, its rows aligned
    # Decode whose column tiles fill under half of the 132 SMs, from 17 rows.
    few = "few column tiles"
    assert [reason(M, 3568, 65 * 64, "decode", 32, 64) for M in (16, 17, 64)] == [None, few, few]
    assert reason(21, 3568, 66 * 64, "decode", 32, 64) is None  # 66 tiles: half the SMs
    assert reason(21, 3568, 65 * 64 + 1, "decode", 32, 64) is None  # a 66th tile, one column wide
    assert reason(21, 3568, 65 * 64, "gemv", 32, 64) is None
    # A prefill of a long K whose tiles fill under 85% of their waves.
    poorly = "long K, tiles fill the waves poorly"
    assert reason(1000, 4096, 11008, block_m=128) == poorly  # 84.8% filled
    assert reason(1000, 4096, 11008, block_m=64) is None  # 92.5%
    assert reason(384, 4096, 23808) == poorly  # 84.5%
    assert [reason(384, 4096, N) for N in (23936, 24064)] == [None, None]  # 85.0% and 85.5%
    assert reason(1000, 4095, 11008, block_m=128) is None  # K short of 4096
    assert reason(278, 5120, 13824, block_m=64) == poorly  # 71.1%
    assert reason(1023, 4096, 2560) == poorly  # 160 tiles in two waves
    assert reason(1024, 4096, 2560) is None  # past a prefill's rows
    assert reason(278, 5120, 13824, "small", block_m=64) is None
    # Rows up to where geglu realigns x: the two constants must move together.
    assert configs.MISALIGNED_ROWS[1] == geglu_module.ALIGN_ROWS_FROM - 1


@needs_interpreter
def test_the_epilogue_path_stands_in_where_fused_would_lose(h200):
    """The plan says which path it took and why; the result is right either way; a path or a
    launch config asked for keeps the fused launch."""
    stood_in = _plan(278, 5120, 13824, stand_in=True)
    assert (stood_in["path"], stood_in["source"], stood_in["reason"]) == (
        "epilogue",
        "stands in",
        "long K, tiles fill the waves poorly",
    )
    assert (_plan(278, 5120, 13824)["path"], _plan(278, 5120, 13824, path="tma", stand_in=True)["path"]) == (
        "tma",
        "tma",
    )
    assert "reason" not in _plan(8192, 4096, 4096, stand_in=True)  # the fused launch, as tuned
    x, weight = make_inputs((40,), 72, 24, torch.float16)  # 144-byte rows: misaligned
    assert launch_plan(x, weight)["reason"] == "weight rows misaligned"
    assert relative_error(geglu(x, weight), reference(x, weight, "none")) <= 5e-4
    launched = []
    from kernels import geglu as geglu_module

    real = geglu_module._launch
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(geglu_module, "_launch", lambda *args: launched.append(args[3].path) or real(*args))
        geglu(x, weight)
        geglu(x, weight, config={"BLOCK_N": 16})
        assert relative_error(geglu(x, weight, stand_in=False), reference(x, weight, "none")) <= 5e-4
    assert launched == ["epilogue", "tma", "tma"]
    assert launch_plan(x, weight, stand_in=False)["path"] == "tma"


@needs_interpreter
def test_where_autotuning_picks_the_tiles_its_pick_does_not_move_a_shape_to_another_path(monkeypatch):
    """On a GPU with no tuned configs the first call's plan has the first candidate's tiles and
    later calls the autotuned ones; the path must be the same for both, or perfbot would check
    one path and time another. 577 rows of K = 4096 -> 27136 fill 80% of the waves in 128 x 128
    tiles and 85.2% in 128 x 64."""
    from kernels import configs
    from kernels import geglu as geglu_module

    monkeypatch.setattr(geglu_module, "_device_info", lambda device: ("an untuned GPU", 132, True))
    monkeypatch.setattr(configs, "_autotuned", {})
    first = _plan(577, 4096, 27136, stand_in=True)
    assert first["source"] == "stands in"  # the untuned plan's tiles: the class's default decides
    tuned_pick = {**configs.candidates("tma", "large")[0], "BLOCK_M": 128, "BLOCK_N": 64}
    configs._autotuned[("an untuned GPU", "tma", "large", torch.bfloat16)] = tuned_pick
    assert _plan(577, 4096, 27136)["BLOCK_N"] == 64  # the pick is the fused launch's now...
    assert _plan(577, 4096, 27136, stand_in=True) == first  # ...and the path the same


def test_k_is_split_only_where_the_tiles_leave_half_the_sms_idle():
    from kernels import configs

    assert configs.decode_split_k(66, 28, 4, 132) == 1  # half the SMs busy: no split
    assert configs.decode_split_k(65, 28, 4, 132) == 2  # one tile fewer: 132 // 65 = 2 parts
    assert configs.decode_split_k(38, 40, 4, 132) == 3  # the SMs limit the split (132 // 38)...
    assert configs.decode_split_k(10, 28, 4, 132) == 3  # ...or the K steps: 8 to a part at 4 stages
    assert configs.decode_split_k(10, 27, 3, 132) == 4  # 6 to a part at 3 stages
    assert configs.decode_split_k(64, 16, 4, 132) == 2  # two parts are a split
    assert configs.decode_split_k(64, 15, 4, 132) == 1  # one part is not
    assert configs.decode_split_k(10, 1, 4, 132) == 1  # nor is none


@needs_interpreter
def test_the_h200_decode_plans_split_k_where_tiles_are_few(h200):
    # 38 tiles of 64 columns, 28 K steps of 128: 132 // 38 = 3 parts, one program per part and tile.
    few = _plan(21, 3568, 2424)
    assert (few["BLOCK_M"], few["BLOCK_N"], few["BLOCK_K"], few["split_k"], few["programs_per_sm"]) == (
        32,
        64,
        128,
        3,
        1,
    )
    assert _plan(1, 1024, 4096)["split_k"] == 1  # 64 tiles, but 8 K steps: parts of 4 would not pipeline
    many = _plan(8, 4096, 11008)  # 344 tiles: no split, the plan as chosen by waves
    assert (many["split_k"], many["programs_per_sm"]) == (1, 3)


@needs_interpreter
def test_of_both_generated_sets_only_odd_m21_splits_k(h200):
    # docs/kernel.md's table of the first set was measured before K was split: it describes this
    # kernel only while none of that set's plans split (tests/test_kernel_report.py names the runs).
    import yaml

    from tests.conftest import ROOT

    suites = yaml.safe_load((ROOT / "kernels" / "suites.yaml").read_text())
    split = [
        (suite, case["name"])
        for suite in ("generated", "generated-2")
        for case in suites[suite]["cases"]
        if _plan(case["M"], case["K"], case["N"]).get("split_k", 1) > 1  # tuned plans leave it out
    ]
    assert split == [("generated-2", "odd-m21")]


@needs_interpreter
def test_the_split_follows_the_chosen_pipeline_and_the_last_partial_k_step(h200, monkeypatch):
    from kernels import configs

    three = next(c for c in configs.DECODE_CANDIDATES if c["BLOCK_N"] == 128 and c["num_stages"] == 3)
    monkeypatch.setattr(configs, "decode_by_waves", lambda *args: dict(three))
    # 32 tiles of 128; K = 1536 is 12 steps: parts of 6 at 3 stages make 2 (at 4 stages, 8: none).
    assert _plan(1, 1536, 4096)["split_k"] == 2
    # K = 1528 ends in a partial step: still 12 steps, still 2 parts (11 would make 1).
    assert _plan(1, 1528, 4096)["split_k"] == 2
    assert _plan(1, 1400, 4096)["split_k"] == 1  # 11 steps
    assert not _plan(1, 1536, 4096)["flatten"]  # a split plan runs no pipeline across tiles


@needs_interpreter
def test_no_part_but_the_last_to_arrive_writes_out():
    # Without its last part a tile is never finished: out keeps its poison and each count stops one
    # short. (In the interpreter parts run one after another; a kernel that finished a tile at the
    # first arrival would write out here.)
    from kernels import geglu as geglu_module

    x, weight = make_inputs((5,), 72, 40, torch.float16)
    split_k, bn, bk = 3, 16, 16
    tiles = triton.cdiv(40, bn)
    out = torch.full((5, 40), float("nan"), dtype=torch.float16)
    counters = torch.zeros(tiles, dtype=torch.int32)
    partials = torch.empty(split_k * tiles * 5 * 2 * bn, dtype=torch.float32)
    x_desc = geglu_module.TensorDescriptor(x, [5, 72], [72, 1], [16, bk])
    w_desc = geglu_module.TensorDescriptor(weight, [2, 40, 72], [40 * 72, 72, 1], [2, bn, bk])
    geglu_module._geglu_split_k_kernel[(tiles * (split_k - 1),)](
        x_desc,
        w_desc,
        partials,
        counters,
        out,
        None,  # h: nothing saved for a backward
        5,
        40,
        72,
        40,
        BLOCK_M=16,
        BLOCK_N=bn,
        BLOCK_K=bk,
        SPLIT_K=split_k,
        APPROXIMATE_TANH=False,
    )
    assert out.isnan().all()
    assert counters.tolist() == [split_k - 1] * tiles


SPLIT_SHAPES = [  # (rows, K, N): K past a multiple of BLOCK_K = 16, N past one of BLOCK_N = 16
    (1, 72, 40),
    (5, 200, 24),
    (21, 88, 56),
    (128, 72, 40),  # not decode: a given split needs only one block of rows for all of them
]
SPLIT_CONFIG = {"BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "num_warps": 4, "num_stages": 2}


@pytest.fixture
def split_launches(monkeypatch):
    """Each launch of the split-K kernel, as (its counter buffer, whether the buffer held zeros),
    with its workspace poisoned first: on a GPU it holds whatever was there, so a tile summed
    before all its parts are stored must come out wrong here too."""
    from kernels import geglu as geglu_module

    real = geglu_module._geglu_split_k_kernel
    launches = []

    class Spy:
        def __getitem__(self, grid):
            def launch(x_desc, w_desc, partials, counters, *args, **kwargs):
                partials.fill_(float("nan"))
                launches.append((counters, not counters.any()))
                return real[grid](x_desc, w_desc, partials, counters, *args, **kwargs)

            return launch

    monkeypatch.setattr(geglu_module, "_geglu_split_k_kernel", Spy())
    return launches


@needs_interpreter
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("split_k", [2, 3])
@pytest.mark.parametrize("M,K,N", SPLIT_SHAPES)
def test_split_k_matches_float64_reference_in_interpreter(split_launches, M, K, N, split_k, approximate):
    config = {**SPLIT_CONFIG, "BLOCK_M": max(16, triton.next_power_of_2(M)), "split_k": split_k}
    _check((M,), K, N, torch.float16, 5e-4, approximate, path="tma", config=config)
    assert len(split_launches) == 1


@needs_interpreter
@pytest.mark.parametrize("split_k", [4, 8])
def test_parts_left_without_k_steps_still_count_in(split_launches, split_k):
    # K = 72 is 5 steps of 16: in 4 parts of 2 steps the last has none; in 8 parts of 1, three.
    _check((5,), 72, 40, torch.float16, 5e-4, "none", path="tma", config={**SPLIT_CONFIG, "split_k": split_k})
    assert len(split_launches) == 1


@needs_interpreter
def test_split_k_counts_on_zeros_and_leaves_them_zero_for_the_next_launch(split_launches):
    x, weight = make_inputs((5,), 72, 40, torch.float16)
    config = {**SPLIT_CONFIG, "split_k": 3}
    first = geglu(x, weight, path="tma", config=config)
    assert torch.equal(geglu(x, weight, path="tma", config=config), first)
    (first_counters, first_zero), (second_counters, second_zero) = split_launches
    # One buffer per stream, not per call: no fill kernel is launched to zero it...
    assert first_counters.data_ptr() == second_counters.data_ptr()
    # ...so the second launch counts on zeros only because the last part of each tile reset them.
    assert first_zero and second_zero
    assert not second_counters.any()


def test_arrival_counts_are_kept_and_grown_zeroed(monkeypatch):
    from kernels import geglu as geglu_module

    monkeypatch.setattr(geglu_module, "_COUNTERS", {})
    cpu = torch.device("cpu")
    held = geglu_module._arrival_counters(cpu, 3)
    assert geglu_module._arrival_counters(cpu, 2).data_ptr() == held.data_ptr()  # fewer tiles: the same
    wider = geglu_module._arrival_counters(cpu, 7)
    assert wider.numel() == 7 and not wider.any()  # more tiles than held: a larger zeroed buffer
    assert geglu_module._arrival_counters(cpu, 7).data_ptr() == wider.data_ptr()


@needs_interpreter
def test_a_launch_stopped_partway_leaves_no_counts_to_the_next(split_launches, monkeypatch):
    from kernels import geglu as geglu_module

    x, weight = make_inputs((5,), 72, 40, torch.float16)
    config = {**SPLIT_CONFIG, "split_k": 3}
    want = geglu(x, weight, path="tma", config=config)
    spy = geglu_module._geglu_split_k_kernel

    class StoppedPartway:
        def __getitem__(self, grid):
            def launch(x_desc, w_desc, partials, counters, *args, **kwargs):
                counters[0] = 2  # two of three parts of tile 0 had counted in, then Ctrl-C
                raise KeyboardInterrupt

            return launch

    monkeypatch.setattr(geglu_module, "_geglu_split_k_kernel", StoppedPartway())
    with pytest.raises(KeyboardInterrupt):
        geglu(x, weight, path="tma", config=config)
    monkeypatch.setattr(geglu_module, "_geglu_split_k_kernel", spy)
    # Were the buffer kept, tile 0's first part would finish it alone, from one part of three.
    assert torch.equal(geglu(x, weight, path="tma", config=config), want)
    assert split_launches[-1][1]  # it counted on zeros


@needs_interpreter
def test_a_split_plan_runs_one_program_per_part_and_tile(h200, monkeypatch):
    from kernels import configs

    # Were waves to pick a persistent config of three programs per SM, the split kernel is not one.
    persistent = next(c for c in configs.DECODE_CANDIDATES if c["programs_per_sm"] == 3)
    monkeypatch.setattr(configs, "decode_by_waves", lambda *args: dict(persistent))
    plan = _plan(1, 4096, 1024)  # 32 tiles of 32 columns: 132 // 32 = 4 parts
    assert (plan["split_k"], plan["programs_per_sm"]) == (4, 1)


@needs_interpreter
def test_a_split_k_needs_one_block_of_rows_for_all_rows():
    x, weight = make_inputs((129,), 72, 40, torch.float16)  # one row more than BLOCK_M
    with pytest.raises(ValueError, match=r"split_k = 2 needs one block of rows holding all 129 rows.*BLOCK_M = 128"):
        geglu(x, weight, path="tma", config={**SPLIT_CONFIG, "BLOCK_M": 128, "split_k": 2})
    with pytest.raises(ValueError, match="split_k must be at least 1, got 0"):
        geglu(x, weight, path="tma", config={**SPLIT_CONFIG, "BLOCK_M": 256, "split_k": 0})
    with pytest.raises(ValueError, match="split_k = 2 runs one CTA per program, got num_ctas = 2"):
        geglu(x, weight, path="tma", config={**SPLIT_CONFIG, "BLOCK_M": 256, "split_k": 2, "num_ctas": 2})
    for option in ({"flatten": True}, {"warp_specialize": True}, {"epilogue_subtile": True}, {"programs_per_sm": 2}):
        with pytest.raises(ValueError, match="one program per part and tile, without"):
            geglu(x, weight, path="tma", config={**SPLIT_CONFIG, "BLOCK_M": 256, "split_k": 2, **option})


def test_the_generated_suites_are_what_the_seeded_generator_draws():
    import yaml

    from kernels import shapes
    from tests.conftest import ROOT

    committed = yaml.safe_load((ROOT / "kernels" / "suites.yaml").read_text())
    for name in shapes.SUITES:
        assert committed[name] == yaml.safe_load(shapes.suite_yaml(name))[name]
        names = [case["name"] for case in committed[name]["cases"]]
        assert len(set(names)) == len(names)
    assert len(committed["generated"]["cases"]) == len(shapes.REPORTED) + shapes.COUNT
    assert len(committed["generated-2"]["cases"]) == shapes.COUNT  # all drawn: no reported shapes in front
    assert len(committed["generated-3"]["cases"]) == shapes.COUNT
    assert shapes.cases() == shapes.cases()  # seeded: the same set every time
    # The first set's draws are the seed's own, none skipped: what was committed before a second
    # set existed, and what its runs measured.
    assert shapes.cases(shapes.SEED, first=[]) == committed["generated"]["cases"][len(shapes.REPORTED) :]
    assert shapes.suite_cases("generated-2") == shapes.suite_cases("generated-2")


def _shape(case: dict) -> tuple[int, int, int]:
    return case["M"], case["K"], case["N"]


def test_the_second_generated_set_is_fresh_and_of_the_same_kinds():
    from kernels import shapes

    first, second = shapes.suite_cases("generated"), shapes.suite_cases("generated-2")
    first_shapes = {_shape(c) for c in first}
    assert not first_shapes & {_shape(c) for c in second}
    assert len({_shape(c) for c in second}) == len(second)
    for drawn in (first[len(shapes.REPORTED) :], second):
        assert sum(c["M"] <= 64 for c in drawn) == sum(c["M"] > 64 for c in drawn) == shapes.COUNT // 2
    # Its seed draws one of the first set's shapes (gemma-2-9b M=1): skipped, the other draws kept.
    unskipped = shapes.cases(shapes.SECOND_SEED, first=[])
    assert {_shape(c) for c in unskipped} & first_shapes
    assert all(c in second for c in unskipped if _shape(c) not in first_shapes)


def test_the_third_set_is_fresh_and_a_quarter_of_each_kind():
    """generated-3 (issue 55): no shape of the first two sets; a quarter each of ragged widths
    (multiples of 8 not of 16, or of 16 not of 64), M just past a tile, decode of 33 to 64 rows
    over N of 1024 to 6144, and the open models of 2025."""
    from kernels import shapes

    earlier = {_shape(c) for name in ("generated", "generated-2") for c in shapes.suite_cases(name)}
    third = shapes.suite_cases("generated-3")
    assert len(third) == shapes.COUNT and not earlier & {_shape(c) for c in third}
    assert len({_shape(c) for c in third}) == len(third)
    ragged, past, few, recent = (third[kind::4] for kind in range(4))
    for case in ragged:
        assert case["name"].startswith("ragged-")
        for width in (case["K"], case["N"]):
            assert width % 8 == 0 and (width % 16 != 0 or width % 64 != 0), case
    assert {width % 16 != 0 for c in ragged for width in (c["K"], c["N"])} == {True, False}  # both kinds
    assert sorted({c["M"] for c in past}) == list(shapes.PAST_A_TILE)
    assert all((c["K"], c["N"]) in shapes.RECENT_MODELS.values() for c in past + recent)
    assert all(c["name"].startswith("few-tiles-") and 33 <= c["M"] <= 64 and 1024 <= c["N"] <= 6144 for c in few)
    assert sum(c["M"] <= 64 for c in recent) == sum(c["M"] > 64 for c in recent) == len(recent) // 2


def test_a_held_out_set_is_drawn_whole_or_refused():
    from kernels import shapes

    with pytest.raises(ValueError, match="a quarter of each of four kinds"):
        shapes.held_out_cases(count=6)
    # Every shape a kind can take at M past a tile is to be avoided: it cannot be drawn apart.
    avoid = [{"M": m, "K": k, "N": n} for m in shapes.PAST_A_TILE for k, n in shapes.RECENT_MODELS.values()]
    with pytest.raises(ValueError, match="could be drawn apart"):
        shapes.held_out_cases(avoid=avoid)


def test_the_held_out_sets_are_not_tuned_on():
    from kernels import shapes, tune

    assert set(shapes.SUITES) == {"generated", "generated-2", "generated-3", "backward-generated"}
    assert "generated" in tune.TUNED_ON and not {"generated-2", "generated-3"} & set(tune.TUNED_ON)
    # The backward suite times the first set's shapes, not the held-out ones.
    assert shapes.suite_cases("backward-generated") == shapes.suite_cases("generated")


@pytest.mark.slow
def test_the_shape_generator_prints_the_suites_it_is_asked_for(monkeypatch, capsys):
    def shapes_main(*args: str) -> tuple[object, str]:
        """`python -m kernels.shapes ARGS` as -m runs it, in this process, which has imported the
        kernels package already (a fresh interpreter spends 3 s of CPU importing its PyTorch):
        what it exits with (None, or sys.exit's message, which Python prints with exit 1) and
        what it printed."""
        monkeypatch.setattr(sys, "argv", ["kernels.shapes", *args])
        try:
            with warnings.catch_warnings():
                # Another test may have imported the module: it is run anew, as __main__, all the same.
                warnings.filterwarnings("ignore", "'kernels.shapes' found in sys.modules", RuntimeWarning)
                runpy.run_module("kernels.shapes", run_name="__main__", alter_sys=True)
        except SystemExit as exit:
            return exit.code, capsys.readouterr().out
        return None, capsys.readouterr().out

    both, printed = shapes_main()
    assert both is None and printed.startswith("generated:\n") and "\ngenerated-2:\n" in printed
    one, printed = shapes_main("generated-2")
    assert one is None and printed.startswith("generated-2:\n") and "\ngenerated:" not in printed
    wrong, printed = shapes_main("generated-4")
    assert isinstance(wrong, str) and wrong.startswith("no generated suite 'generated-4'") and printed == ""


@needs_interpreter
@pytest.mark.parametrize(
    "batch,K,N,dtype,approximate",
    [
        ((1,), 41, 7, torch.float16, "none"),
        ((3, 43), 72, 150, torch.float16, "tanh"),
        ((130,), 375, 40, torch.float32, "none"),
        ((130,), 375, 40, torch.float32, "tanh"),
    ],
)
def test_the_epilogue_path_computes_what_eager_computes(monkeypatch, batch, K, N, dtype, approximate):
    """cuBLAS's z (here the CPU's mm) in x's dtype, as eager's matmul writes it, then one
    elementwise kernel, on shapes no TMA path can take (K = 41) and edge tiles in both directions
    (N = 150 past one 128-column block; 130 rows past 8 blocks of 16). An fp32 z would be more
    precise than eager's, not the same: its dtype is asserted."""
    from kernels import geglu as geglu_module

    zs, launched = [], []
    real_z, real_launch = geglu_module._z, geglu_module._launch_epilogue
    monkeypatch.setattr(geglu_module, "_z", lambda *args: zs.append(real_z(*args)) or zs[-1])
    monkeypatch.setattr(geglu_module, "_launch_epilogue", lambda *args: launched.append(1) or real_launch(*args))
    _check_as_eager(batch, K, N, dtype, approximate)
    assert launched == [1] and [z.dtype for z in zs] == [dtype]
    x, weight = make_inputs(batch, K, N, dtype)
    plan = launch_plan(x, weight, path="epilogue")
    assert plan["path"] == "epilogue" and plan["source"] == "fixed"


def _check_as_eager(batch, K, N, dtype, approximate, device=DEVICE, path="epilogue"):
    """The epilogue path's out (geglu's with `path`) is eager's, to within a few roundings, and as
    close to float64; nothing is written past out (a buffer's tail stays NaN)."""
    x, weight = make_inputs(batch, K, N, dtype, device, seed=K * N)
    rows = math.prod(batch)
    buffer = torch.full((rows * N + 64,), float("nan"), dtype=dtype, device=device)
    out = buffer[: rows * N].view(*batch, N)
    geglu(x, weight, approximate=approximate, out=out, path=path)
    assert torch.isfinite(out).all() and torch.isnan(buffer[rows * N :]).all()
    z1, z2 = (x @ weight.T).float().chunk(2, dim=-1)  # eager's z, in x's dtype
    eager_out = (z1 * F.gelu(z2, approximate=approximate)).to(dtype)
    # One rounding of out apart, and the last bits of fp32 math: the kernel's erf and tanh and
    # PyTorch's differ there (1.03e-6 relative on one row of 8 with tanh on an H100, 9 ulps).
    roundings = torch.finfo(dtype).eps + 16 * torch.finfo(torch.float32).eps
    assert relative_error(out, eager_out) <= roundings
    exact = reference(x, weight, approximate)
    assert relative_error(out, exact) <= relative_error(eager_out, exact) + roundings


@pytest.mark.gpu
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("batch,K,N", [*TMA_SHAPES, ((9,), 41, 17), ((8192,), 2048, 5120), ((513,), 3000, 7000)])
def test_the_epilogue_path_on_gpu_computes_what_eager_computes(batch, K, N, dtype, approximate):
    _check_as_eager(batch, K, N, dtype, approximate, device="cuda")


@needs_interpreter
def test_the_epilogue_path_refuses_launch_options():
    """An option of the fused kernels given to the epilogue path is refused, not ignored."""
    x, weight = make_inputs((5,), 64, 24, torch.float16)
    with pytest.raises(ValueError, match="the epilogue path takes no launch options"):
        geglu(x, weight, path="epilogue", config={"split_k": 2})
    geglu(x, weight, path="epilogue", config={"BLOCK_N": 32})  # its sizes are its own to set


@needs_interpreter
@pytest.mark.parametrize("batch,K,N", [((5,), 64, 64), ((64,), 72, 40)])
def test_decode_blocks_cover_every_row(batch, K, N):
    x, weight = make_inputs(batch, K, N, torch.float16)
    assert launch_plan(x, weight)["BLOCK_M"] == max(16, 1 << (batch[0] - 1).bit_length())
    _check(batch, K, N, torch.float16, 5e-4, "none", path="pointer")


@needs_interpreter
def test_tma_path_refuses_what_it_cannot_describe():
    x, weight = make_inputs((10,), 41, 24, torch.float16)  # K = 41: rows not 16-byte aligned
    with pytest.raises(ValueError, match="TMA path"):
        geglu(x, weight, path="tma")
    with pytest.raises(ValueError, match="'cuda'"):
        geglu(x, weight, path="cuda")


@needs_interpreter
def test_the_two_halves_are_not_interchangeable():
    # z1 * gelu(z2) != z2 * gelu(z1): a kernel that gated the wrong half must fail.
    x, weight = make_inputs((33,), 48, 20, torch.float32)
    swapped = torch.cat(weight.chunk(2)[::-1])
    assert relative_error(geglu(x, swapped), reference(x, weight, "none")) > 0.1


@needs_interpreter
def test_erf_and_tanh_differ():
    x, weight = make_inputs((64,), 32, 32, torch.float32)
    x = x * 3  # where the two GELUs part most
    assert relative_error(geglu(x, weight, approximate="tanh"), reference(x, weight, "none")) > 1e-5


@triton.jit
def _gelu_of(z_ptr, out_ptr, count, APPROXIMATE_TANH: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    z = tl.load(z_ptr + offs, mask=offs < count)
    tl.store(out_ptr + offs, _gelu(z, APPROXIMATE_TANH), mask=offs < count)


def _gelu_error(device: str, approximate: str) -> tuple[float, float]:
    """Largest relative error of the kernel's GELU over a fine grid of fp32 inputs (where
    |gelu| > 1e-6), and its largest absolute error anywhere."""
    z = torch.linspace(-12, 12, 480_001, dtype=torch.float32, device=device)
    out = torch.empty_like(z)
    # Each point is computed apart from the others: large blocks change no value, and Triton's
    # interpreter spends its time per program (59 here, 469 in blocks of 1024).
    block = 8192
    _gelu_of[(triton.cdiv(z.numel(), block),)](z, out, z.numel(), APPROXIMATE_TANH=approximate == "tanh", BLOCK=block)
    exact = F.gelu(z.double(), approximate=approximate)
    error = (out.double() - exact).abs()
    return (error / exact.abs())[exact.abs() > 1e-6].max().item(), error.max().item()


@needs_interpreter
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_accurate_to_a_few_ulp_of_fp32_in_interpreter(approximate):
    relative, absolute = _gelu_error("cpu", approximate)
    assert relative < 1e-5 and absolute < 1e-6


@pytest.mark.gpu
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_accurate_to_a_few_ulp_of_fp32_on_gpu(approximate):
    relative, absolute = _gelu_error("cuda", approximate)
    assert relative < 1e-5 and absolute < 1e-6


def _gelu_special(device: str, approximate: str) -> list[float]:
    z = torch.tensor([float("nan"), float("inf"), -float("inf"), 2.0**127, -(2.0**127), 0.0], device=device)
    out = torch.empty_like(z)
    _gelu_of[(1,)](z, out, z.numel(), APPROXIMATE_TANH=approximate == "tanh", BLOCK=8)
    return out.tolist()


def _assert_special_values(values: list[float]) -> None:
    nan, inf, minus_inf, big, minus_big, zero = values
    assert math.isnan(nan)
    assert inf == math.inf and big == 2.0**127
    # gelu's limit at -inf is 0: the tail held at F(-T) leaves at most T F(-T) < 3e-7.
    assert abs(minus_inf) < 1e-6 and abs(minus_big) < 1e-6
    assert zero == 0.0


@needs_interpreter
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_keeps_nan_and_infinities_in_interpreter(approximate):
    _assert_special_values(_gelu_special("cpu", approximate))


@pytest.mark.gpu
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_keeps_nan_and_infinities_on_gpu(approximate):
    _assert_special_values(_gelu_special("cuda", approximate))


@needs_interpreter
def test_empty_dimensions():
    x, weight = make_inputs((0,), 8, 4, torch.float32)
    assert geglu(x, weight).shape == (0, 4)
    x, weight = make_inputs((5,), 0, 4, torch.float32)
    assert torch.equal(geglu(x, weight), torch.zeros(5, 4))


@needs_interpreter
def test_non_contiguous_inputs():
    x, weight = make_inputs((40,), 64, 24, torch.float32)
    x_t = x.T.contiguous().T  # same values, transposed strides
    w_t = weight.T.contiguous().T
    assert relative_error(geglu(x_t, w_t), reference(x, weight, "none")) <= 1e-5


@pytest.mark.gpu
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype,bound", GPU_TOLERANCES)
@pytest.mark.parametrize("batch,K,N", [*SHAPES, ((1000,), 1000, 1000), ((2, 2048), 2048, 2560), ((16,), 3072, 24576)])
def test_matches_float64_reference_on_gpu(batch, K, N, dtype, bound, approximate):
    _check(batch, K, N, dtype, bound, approximate, device="cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("path", ["tma", "pointer"])  # the epilogue path has eager's precision: above
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype,bound", [(torch.float16, 5e-4), (torch.bfloat16, 3e-3)])
@pytest.mark.parametrize("batch,K,N", [*TMA_SHAPES, ((8192,), 2048, 5120), ((16,), 3072, 24576), ((64,), 5376, 21504)])
def test_every_path_on_gpu(batch, K, N, dtype, bound, approximate, path):
    _check(batch, K, N, dtype, bound, approximate, device="cuda", path=path)


@pytest.mark.gpu
@pytest.mark.parametrize("split_k", [2, 3, 7])
@pytest.mark.parametrize("M,K,N", [(21, 3568, 2424), (1, 1024, 4096), (64, 1000, 200)])
def test_split_k_on_gpu_is_right_and_the_same_every_time(M, K, N, split_k):
    # Here the parts run at once, not one after another as in the interpreter: the count must
    # order every part's stores before the last part's loads, and the sum's order must not depend
    # on which part arrives last.
    x, weight = make_inputs((M,), K, N, torch.bfloat16, "cuda")
    config = {
        **SPLIT_CONFIG,
        "BLOCK_M": max(16, triton.next_power_of_2(M)),
        "BLOCK_N": 64,
        "BLOCK_K": 128,
        "num_stages": 3,
        "split_k": split_k,
    }
    first = geglu(x, weight, path="tma", config=config)
    assert relative_error(first, reference(x, weight, "none")) <= 3e-3
    for _ in range(50):
        assert torch.equal(geglu(x, weight, path="tma", config=config), first)


@pytest.mark.gpu
def test_split_k_on_two_streams_at_once_and_in_a_cuda_graph_is_right(monkeypatch):
    # Each stream counts arrivals in its own buffer: were they shared, overlapping launches would
    # see each other's counts and finish tiles early or never. Launches this short seldom overlap,
    # so which buffer each launch took is checked as well as its output.
    from kernels import geglu as geglu_module

    taken = []  # (the stream it was taken on, the buffer's address)
    real_counters = geglu_module._arrival_counters

    def arrival_counters(device, tiles):
        counters = real_counters(device, tiles)
        taken.append((torch.cuda.current_stream(device).cuda_stream, counters.data_ptr()))
        return counters

    monkeypatch.setattr(geglu_module, "_arrival_counters", arrival_counters)
    config = {**SPLIT_CONFIG, "BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 128, "num_stages": 3, "split_k": 3}
    inputs = [make_inputs((21,), 3568, 2424, torch.bfloat16, "cuda") for _ in range(2)]
    expected = [geglu(x, weight, path="tma", config=config) for x, weight in inputs]
    streams = [torch.cuda.Stream() for _ in inputs]
    torch.cuda.synchronize()
    outs = [[], []]
    for _ in range(20):
        for side, stream, (x, weight) in zip(outs, streams, inputs, strict=True):
            with torch.cuda.stream(stream):
                side.append(geglu(x, weight, path="tma", config=config))
    torch.cuda.synchronize()
    for side, want in zip(outs, expected, strict=True):
        assert all(torch.equal(out, want) for out in side)
    on_streams = [{address for handle, address in taken if handle == stream.cuda_stream} for stream in streams]
    assert [len(buffers) for buffers in on_streams] == [1, 1] and on_streams[0] != on_streams[1]

    x, weight = inputs[0]
    graph, out = torch.cuda.CUDAGraph(), torch.empty(21, 2424, dtype=torch.bfloat16, device="cuda")
    capture = torch.cuda.Stream()
    capture.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(capture):
        geglu(x, weight, path="tma", config=config, out=out)  # compiled before capture
        before_capture = taken[-1][1]  # the capture stream's kept buffer
        with torch.cuda.graph(graph, stream=capture):
            geglu(x, weight, path="tma", config=config, out=out)
    # The graph zeroes counts of its own: a replay on another stream must not share a kept buffer.
    assert taken[-1][1] != before_capture
    for _ in range(5):
        out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, expected[0])


BAD_INPUTS = [
    # (x shape, x dtype, weight shape, weight dtype, words the message must contain)
    ((4, 8), torch.float32, (6, 7), torch.float32, ["(6, 7)", "(4, 8)"]),
    ((4, 8), torch.float32, (5, 8), torch.float32, ["(5, 8)"]),
    ((4, 8), torch.float32, (6, 8, 1), torch.float32, ["(6, 8, 1)"]),
    ((4, 8), torch.float16, (6, 8), torch.float32, ["torch.float16", "torch.float32"]),
    ((4, 8), torch.float64, (6, 8), torch.float64, ["torch.float64"]),
    ((4, 8), torch.int32, (6, 8), torch.int32, ["torch.int32"]),
]


@pytest.mark.parametrize("x_shape,x_dtype,w_shape,w_dtype,words", BAD_INPUTS)
def test_bad_inputs_raise_value_error_naming_them(x_shape, x_dtype, w_shape, w_dtype, words):
    x = torch.zeros(x_shape, dtype=x_dtype, device=DEVICE)
    weight = torch.zeros(w_shape, dtype=w_dtype, device=DEVICE)
    with pytest.raises(ValueError) as error:
        geglu(x, weight)
    for word in words:
        assert word in str(error.value)


def test_bad_approximation_and_out():
    x, weight = make_inputs((4,), 8, 3, torch.float32)
    with pytest.raises(ValueError, match="'sigmoid'"):
        geglu(x, weight, approximate="sigmoid")
    with pytest.raises(ValueError, match=r"\(4, 3\)"):
        geglu(x, weight, out=torch.empty(4, 4, device=DEVICE))


def test_cpu_tensors_are_refused_outside_the_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    x, weight = make_inputs((4,), 8, 3, torch.float32, device="cpu")
    with pytest.raises(ValueError, match="cpu"):
        geglu(x, weight)


def test_kernel_config_is_recorded_for_each_dtype():
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        x, weight = make_inputs((300,), 64, 40, dtype)
        config = launch_plan(x, weight)
        assert config["path"] in ("tma", "pointer")
        assert config["source"] in ("tuned", "untuned", "autotuned", "fixed")
        assert {"BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages", "shape_class", "gpu"} <= set(config)


@needs_interpreter
def test_options_a_given_config_leaves_out_are_off(monkeypatch):
    # The tuner passes each candidate as `config`; options a candidate leaves out (programs_per_sm,
    # maxnreg) must take their defaults, not the values of the config tuned before.
    from kernels import configs
    from kernels import geglu as geglu_module

    tuned = {
        "BLOCK_M": 32,
        "BLOCK_N": 16,
        "BLOCK_K": 16,
        "GROUP_M": 8,
        "num_warps": 4,
        "num_stages": 2,
        "warp_specialize": False,
        "one_dot": True,
        "flatten": True,
        "programs_per_sm": 2,
        "maxnreg": 128,
    }
    monkeypatch.setattr(configs, "lookup", lambda *key: {**tuned, "source": "tuned"})
    launched = []
    real_launch = geglu_module._launch_tma
    monkeypatch.setattr(geglu_module, "_launch_tma", lambda *args: launched.append(args[3]) or real_launch(*args))
    candidate = {key: value for key, value in tuned.items() if key not in ("programs_per_sm", "maxnreg")}
    _check((130,), 64, 72, torch.float16, 5e-4, "none", path="tma", config=candidate)
    assert launched[-1].config.programs_per_sm == 1 and launched[-1].config.maxnreg is None
    assert launched[-1].source == "given" and launched[-1].config.BLOCK_N == 16
    _check((130,), 64, 72, torch.float16, 5e-4, "none", path="tma")  # the tuned config, as tuned
    assert launched[-1].config.programs_per_sm == 2 and launched[-1].source == "tuned"


@needs_interpreter
def test_an_unknown_launch_option_is_refused():
    x, weight = make_inputs((9,), 40, 24, torch.float16)
    with pytest.raises(ValueError, match=r"unknown launch option.*stream_k_waves"):
        geglu(x, weight, path="tma", config={"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "stream_k_waves": 1})


def test_a_tuned_config_without_a_size_or_with_an_unknown_option_is_refused(monkeypatch):
    from kernels import configs

    x, weight = make_inputs((9,), 40, 24, torch.float16)
    sizes = {"BLOCK_M": 32, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "num_warps": 4, "num_stages": 2}
    monkeypatch.setattr(configs, "lookup", lambda *key: {**sizes, "stream_k_waves": 1, "source": "tuned"})
    with pytest.raises(ValueError, match=r"unknown launch option.*stream_k_waves"):
        launch_plan(x, weight)
    without = {name: value for name, value in sizes.items() if name != "GROUP_M"}
    monkeypatch.setattr(configs, "lookup", lambda *key: {**without, "source": "tuned"})
    with pytest.raises(ValueError, match=r"a launch config needs \['GROUP_M'\]"):
        launch_plan(x, weight)


def test_shape_classes_and_a_class_borrowing_its_neighbours_tuned_config(tmp_path, monkeypatch):
    from kernels import configs

    assert [configs.shape_class(M, 1024, 24576, 132) for M in (1, 4, 5, 64, 65)] == [
        "gemv",
        "gemv",
        "decode",
        "decode",
        "small",
    ]
    assert configs.shape_class(65, 4096, 24576, 132) == "large"  # a long K takes the 128x128 tile
    table = tmp_path / "tuned.yaml"
    table.write_text(
        "GPU X:\n  pointer:\n    decode: {BLOCK_M: 64, BLOCK_N: 32, BLOCK_K: 256, GROUP_M: 1, "
        "num_warps: 4, num_stages: 6}\n  prefer: {decode: pointer}\n"
    )
    monkeypatch.setattr(configs, "TUNED_FILE", table)
    configs.tuned_table.cache_clear()
    try:
        borrowed = configs.lookup("GPU X", "pointer", "gemv", torch.bfloat16)
        assert borrowed["BLOCK_N"] == 32 and borrowed["source"] == "tuned for decode"
        assert configs.preferred_path("GPU X", "gemv") == "pointer"
        assert configs.lookup("GPU X", "pointer", "small", torch.bfloat16)["source"] == "untuned"
    finally:
        configs.tuned_table.cache_clear()
