"""kernels/geglu_layer.py: a GeGLU layer keeps its weight's rows padded to 32 bytes, made once per
value of the weight, and trains its parameter itself; the subject's `fused-layer` times it."""

from __future__ import annotations

import gc

import pytest
import torch
import torch.nn.functional as F

from kernels import geglu_layer
from kernels.geglu import launch_plan
from kernels.geglu_layer import GeGLU
from tests.conftest import HAS_GPU
from tests.test_geglu import reference, relative_error

DEVICE = "cuda" if HAS_GPU else "cpu"


@pytest.fixture
def pads(monkeypatch) -> list[tuple[int, ...]]:
    """The shapes of the weights the layer padded, in order."""
    made: list[tuple[int, ...]] = []
    real = geglu_layer._aligned_rows
    monkeypatch.setattr(geglu_layer, "_aligned_rows", lambda w: made.append(tuple(w.shape)) or real(w))
    return made


def _layer(K: int, N: int, dtype: torch.dtype, **options) -> GeGLU:
    torch.manual_seed(K * N)
    return GeGLU(K, N, dtype=dtype, device=DEVICE, **options)


def test_rows_of_80_bytes_are_padded_once_per_value_of_the_weight(pads):
    # K = 40 in fp16: rows of 80 bytes, 16-byte but not 32-byte aligned.
    layer = _layer(40, 24, torch.float16)
    x = torch.randn(130, 40, dtype=torch.float16, device=DEVICE)
    with torch.no_grad():
        for _ in range(3):
            out = layer(x)
            assert relative_error(out, reference(x, layer.weight, "none")) <= 5e-4
        kernel_weight = layer.kernel_weight()
        assert kernel_weight.shape == (48, 40) and kernel_weight.stride(0) == 48
        assert torch.equal(kernel_weight, layer.weight)
        assert pads == [(48, 40)]
        layer.weight.mul_(-1)  # in place, as an optimizer step: the copy follows it
        assert relative_error(layer(x), reference(x, layer.weight, "none")) <= 5e-4
        assert pads == [(48, 40)] * 2
        layer.load_state_dict({"weight": torch.randn(48, 40, dtype=torch.float16)})
        assert relative_error(layer(x), reference(x, layer.weight, "none")) <= 5e-4
        assert pads == [(48, 40)] * 3
        layer.weight = torch.nn.Parameter(torch.randn(48, 40, dtype=torch.float16, device=DEVICE))  # replaced
        assert relative_error(layer(x), reference(x, layer.weight, "none")) <= 5e-4
        assert len(pads) == 4
    assert list(layer.state_dict()) == ["weight"]  # the copy is no state


def _alias(t: torch.Tensor) -> torch.Tensor:
    """A tensor over t's memory with a version counter of its own."""
    alias = torch.empty(0, dtype=t.dtype, device=t.device)
    return alias.set_(t.untyped_storage(), t.storage_offset(), t.shape, t.stride())


def test_a_new_parameter_where_the_old_one_was_is_padded_anew(pads):
    """Memory freed and taken again can give a new weight the old one's address and version
    count: the copy belongs to the parameter it was made of."""
    layer = _layer(40, 24, torch.float16)
    x = torch.randn(9, 40, dtype=torch.float16, device=DEVICE)
    with torch.no_grad():
        layer(x)
        old = layer.weight
        new = _alias(old)
        while new._version < old._version:
            new.mul_(1)  # counted up to the old one's count, its values unchanged
        layer.weight = torch.nn.Parameter(new)
        _alias(old).copy_(torch.randn(48, 40, dtype=torch.float16))  # other values, neither count moved
        assert (layer.weight.data_ptr(), layer.weight._version) == (old.data_ptr(), old._version)
        assert relative_error(layer(x), reference(x, layer.weight, "none")) <= 5e-4
    assert len(pads) == 2


@pytest.mark.parametrize(
    "K,dtype",
    [(48, torch.float16), (36, torch.float32)],
    ids=["rows-of-96-bytes", "fp32-rows-of-144-bytes-which-tma-does-not-read"],
)
def test_a_weight_the_kernel_reads_as_it_is_is_not_copied(pads, K, dtype):
    layer = _layer(K, 8, dtype)
    with torch.no_grad():
        assert layer.kernel_weight().data_ptr() == layer.weight.data_ptr()
    assert pads == []


def test_a_trained_layers_gradient_reaches_its_parameter(pads):
    layer = _layer(40, 24, torch.float32, approximate="tanh")
    x = torch.randn(3, 7, 40, dtype=torch.float32, device=DEVICE, requires_grad=True)
    g = torch.randn(3, 7, 24, dtype=torch.float32, device=DEVICE)
    torch.autograd.backward(layer(x), g)
    x64 = x.detach().double().requires_grad_()
    w64 = layer.weight.detach().double().requires_grad_()
    z1, z2 = (x64 @ w64.T).chunk(2, dim=-1)
    torch.autograd.backward(z1 * F.gelu(z2, approximate="tanh"), g.double())
    assert layer.weight.grad is not None and x.grad is not None
    assert relative_error(layer.weight.grad, w64.grad) <= 1e-5
    assert relative_error(x.grad, x64.grad) <= 1e-5
    assert pads == []  # trained: the parameter itself, never a copy


def test_a_layer_holding_a_weight_reads_that_weight_not_a_copy():
    weight = torch.randn(16, 40, dtype=torch.float16, device=DEVICE)
    layer = GeGLU.holding(weight, approximate="tanh")
    assert layer.weight.data_ptr() == weight.data_ptr() and not layer.weight.requires_grad
    assert (layer.in_features, layer.out_features, layer.approximate) == (40, 8, "tanh")
    assert "approximate='tanh'" in repr(layer)


def test_an_unknown_gelu_is_refused():
    with pytest.raises(ValueError, match="approximate must be one of"):
        GeGLU(16, 8, approximate="erf")


def test_fused_layer_keeps_one_layer_per_weight_and_gelu_while_the_weight_lives(pads):
    import importlib

    geglu_subject = importlib.import_module("kernels.subject")  # the module; `kernels.subject` is its Subject
    fused_layer = geglu_subject.subject.implementations["fused-layer"]
    assert fused_layer.under_test and fused_layer.modes == ("forward",)
    x = torch.randn(9, 40, dtype=torch.float16, device=DEVICE)
    weight = torch.randn(48, 40, dtype=torch.float16, device=DEVICE) / 40**0.5
    with torch.no_grad():
        for approximate in ("none", "tanh", "none", "tanh"):
            out = fused_layer.fn(x, weight, approximate=approximate)
            assert relative_error(out, reference(x, weight, approximate)) <= 5e-4
    assert pads == [(48, 40)] * 2  # one padded copy per layer, one layer per GELU
    assert fused_layer.config(x, weight)["path"] == launch_plan(x, weight)["path"]
    fresh = weight.clone()
    with torch.no_grad():
        fused_layer.fn(x, fresh)
    assert len(pads) == 3  # a fresh weight, a layer of its own
    held = len(geglu_subject._LAYERS)
    del weight, fresh
    gc.collect()
    assert len(geglu_subject._LAYERS) == held - 2  # gone with their weights


@pytest.mark.gpu
def test_on_the_gpu_a_padded_weight_is_read_through_tma():
    """K = 3000 in bf16 (rows of 6000 bytes): the layer's copy is 32-byte aligned, and the plan
    reads it on the TMA path."""
    layer = _layer(3000, 7000, torch.bfloat16)
    x = torch.randn(513, 3000, dtype=torch.bfloat16, device=DEVICE)
    with torch.no_grad():
        out = layer(x)
        kernel_weight = layer.kernel_weight()
    assert kernel_weight.stride(0) == 3008 and kernel_weight.data_ptr() % 32 == 0
    assert launch_plan(x, kernel_weight)["path"] == "tma"
    assert relative_error(out, reference(x, layer.weight, "none")) <= 0.003
