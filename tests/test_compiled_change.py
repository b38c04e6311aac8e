"""What changed in the compiled code between two sides of a benchmark (deciding/compiled_change.py),
on records of this repository's kernel as Triton compiled it (tests/compiled_records.py)."""

from dataclasses import replace

from perfbot.deciding.compiled_change import CompiledChange, Difference, KernelChange, compiled_change
from perfbot.records.compiled import Compiled
from tests.compiled_records import (
    DECODE_BLOCK_K_64,
    DECODE_BLOCK_K_128,
    LARGE_MAXNREG_128,
    LARGE_TUNED,
    compiled,
    other_cubin,
)


def test_a_block_k_change_shows_only_what_differs_in_the_order_a_reader_asks():
    change = compiled_change(compiled(DECODE_BLOCK_K_128), compiled(DECODE_BLOCK_K_64))
    assert change is not None and not change.same_machine_code and change.unknown is None
    (kernel,) = change.kernels
    assert (kernel.name, kernel.only_on) == ("_geglu_tma_kernel", None)
    assert kernel.differences == [
        Difference("registers", 62, 45),
        Difference("shared memory (B)", 42032, 21552),
        Difference("occupancy", "5 blocks/SM (shared memory)", "9 blocks/SM (shared memory)"),
        Difference("BLOCK_K", 128, 64),
        Difference("mma instructions", 16, 8),
        Difference("shared load instructions", 16, 8),
        Difference("total instructions", 536, 504),
        Difference("TTGIR", "1e45ba64ce54", "582d707e56e4"),
        Difference("PTX", "6ff4c963dbab", "ae30b9450ee8"),
        Difference("cubin", "fcda873ee99f", "3dfcb19267ec"),
    ]


def test_spills_and_maxnreg_show_with_the_occupancy_limit_that_moved():
    change = compiled_change(compiled(LARGE_TUNED), compiled(LARGE_MAXNREG_128))
    assert change is not None
    shown = {d.what: (d.baseline, d.current) for d in change.kernels[0].differences}
    assert shown["maxnreg"] == (None, 128)
    assert shown["spill stores (B)"] == (0, 1080) and shown["spill loads (B)"] == (0, 824)
    assert shown["occupancy"] == ("1 blocks/SM (registers)", "1 blocks/SM (shared memory)")
    assert shown["local store instructions"] == (0, 206)
    assert "mma instructions" not in shown and "shared memory (B)" not in shown  # equal: not shown


def test_the_same_cubin_is_the_same_machine_code_and_shows_no_kernel():
    assert compiled_change(compiled(LARGE_TUNED), compiled(LARGE_TUNED)) == CompiledChange(same_machine_code=True)


def test_another_cubin_alone_is_not_the_same_machine_code():
    change = compiled_change(compiled(LARGE_TUNED), compiled(other_cubin(LARGE_TUNED)))
    assert change == CompiledChange(
        kernels=[KernelChange("_geglu_tma_kernel", [Difference("cubin", "761dea15944d", "000000000000")])]
    )


def test_the_same_cubin_on_another_grid_is_the_same_machine_code_launched_otherwise():
    change = compiled_change(compiled(LARGE_TUNED), compiled(replace(LARGE_TUNED, grid=[264, 1, 1], launches=2)))
    assert change is not None and change.same_machine_code
    assert change.kernels[0].differences == [Difference("grid", "132×1×1", "264×1×1"), Difference("launches", 1, 2)]


def test_kernels_pair_by_name_and_by_rank_among_their_launches():
    """A kernel launched on two grids pairs its first launch with the other side's first, its
    second with the second, wherever the other kernels fall in the order."""
    copy = replace(DECODE_BLOCK_K_64, name="_align_rows_kernel", grid=[16, 1, 1])
    second = replace(LARGE_TUNED, grid=[66, 1, 1])
    before = compiled(LARGE_TUNED, copy, second)
    after = compiled(copy, LARGE_TUNED, replace(other_cubin(second, "1"), registers=168))
    change = compiled_change(before, after)
    assert change is not None and not change.same_machine_code
    registers, cubin = Difference("registers", 160, 168), Difference("cubin", "761dea15944d", "111111111111")
    assert change.kernels == [KernelChange("_geglu_tma_kernel", [registers, cubin])]  # the second launch's
    # A change in the first launch is the first's, not hidden by the second's.
    first = compiled_change(compiled(LARGE_TUNED, second), compiled(other_cubin(LARGE_TUNED, "1"), second))
    assert first is not None and not first.same_machine_code
    assert [d.what for kernel in first.kernels for d in kernel.differences] == ["cubin"]
    # The order of launch alone differs: paired by name, nothing else.
    assert compiled_change(before, compiled(copy, LARGE_TUNED, second)) == CompiledChange(same_machine_code=True)


def test_a_kernel_only_one_side_launched_says_which_side():
    copy = replace(DECODE_BLOCK_K_64, name="_align_rows_kernel")
    added = compiled_change(compiled(DECODE_BLOCK_K_64), compiled(copy, DECODE_BLOCK_K_64))
    assert added == CompiledChange(kernels=[KernelChange("_align_rows_kernel", [], "current")])
    gone = compiled_change(compiled(copy, DECODE_BLOCK_K_64), compiled(DECODE_BLOCK_K_64))
    assert gone == CompiledChange(kernels=[KernelChange("_align_rows_kernel", [], "baseline")])
    nothing_before = compiled_change(Compiled(), compiled(DECODE_BLOCK_K_64))
    assert nothing_before == CompiledChange(kernels=[KernelChange("_geglu_tma_kernel", [], "current")])


def test_a_side_that_recorded_nothing_makes_the_change_unknown_and_says_which():
    decode = compiled(DECODE_BLOCK_K_64)
    assert compiled_change(None, None) is None
    assert compiled_change(Compiled(), Compiled()) is None  # nothing launched: no Triton kernel
    assert compiled_change(None, Compiled()) is None
    no_baseline = compiled_change(None, decode)
    assert (
        no_baseline is not None and no_baseline.unknown is not None and no_baseline.unknown.startswith("the baseline")
    )
    no_current = compiled_change(decode, None)
    assert no_current is not None and no_current.unknown is not None and no_current.unknown.startswith("the current")
    unreadable = compiled_change(decode, Compiled(unrecorded="cuobjdump failed"))
    assert unreadable == CompiledChange(unknown="the current's kernels could not be recorded: cuobjdump failed")
    assert not unreadable.same_machine_code and not unreadable.kernels


def test_kernels_past_the_record_limit_keep_it_from_being_the_same_machine_code():
    change = compiled_change(compiled(LARGE_TUNED, more=2), compiled(LARGE_TUNED, more=2))
    assert change == CompiledChange()


def test_specialization_entries_compare_one_by_one_and_lists_read_as_lists():
    before = replace(DECODE_BLOCK_K_64, specialization={**DECODE_BLOCK_K_64.specialization, "aligned": ["K", "M"]})
    after = replace(
        DECODE_BLOCK_K_64,
        specialization={**DECODE_BLOCK_K_64.specialization, "aligned": ["K", "M", "N"], "EVEN_K": True},
    )
    change = compiled_change(compiled(before), compiled(after))
    assert change is not None
    assert change.kernels[0].differences == [Difference("EVEN_K", None, True), Difference("aligned", "K, M", "K, M, N")]


def test_kernels_past_the_recorded_ones_are_a_difference_of_their_own():
    change = compiled_change(compiled(LARGE_TUNED, more=2), compiled(LARGE_TUNED, more=5))
    assert change is not None and not change.same_machine_code
    assert change.kernels == [KernelChange("kernels not recorded", [Difference("how many", 2, 5)])]
    same = compiled_change(compiled(LARGE_TUNED, more=2), compiled(LARGE_TUNED, more=2))
    assert same is not None and same.kernels == [] and not same.same_machine_code  # unrecorded ones unknown


def test_a_change_holds_every_kernel_of_two_full_records_and_a_file_holds_no_more():
    """Each side records MAX_KERNELS kernels at most; where no two share a name, the change lists
    all of them, each launched by one side: 2 * MAX_KERNELS, which a comparison file must hold, and
    one more it refuses (records, and files read back, are bounded)."""
    import pytest
    from pydantic import TypeAdapter, ValidationError

    from perfbot.records.compiled import MAX_KERNELS

    def side(prefix: str) -> Compiled:
        return compiled(*(replace(DECODE_BLOCK_K_64, name=f"{prefix}{i}") for i in range(MAX_KERNELS)))

    change = compiled_change(side("a"), side("b"))
    assert change is not None and len(change.kernels) == 2 * MAX_KERNELS
    adapter = TypeAdapter(CompiledChange)
    assert adapter.validate_json(adapter.dump_json(change)) == change  # as a comparison file is read back
    one_more = replace(change, kernels=[*change.kernels, change.kernels[0]])
    with pytest.raises(ValidationError, match=f"at most {2 * MAX_KERNELS} items"):
        adapter.validate_json(adapter.dump_json(one_more))
