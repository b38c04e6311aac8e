"""Where a result was measured: software versions, the GPU, and its clocks and limits (NVML)."""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from typing import Any

import triton

from .. import __version__
from ..records.run import Environment, GpuState, GpuStates
from .triton_pin import RELEASE_COMMITS

# NVML's clocks-event ("throttle") reason bits, from nvml.h.
_CLOCK_EVENT_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}


# Reasons that mean the clocks were held down while measuring (not idle or a setting).
THROTTLE_REASONS = frozenset(
    {"sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"}
)
# SM clock change between the first and last round of a run that marks it as drifted.
DRIFT_PERCENT = 2.0


def triton_version() -> str:
    """The imported Triton's version; "unknown" for a build that does not say (a stand-in, a
    broken install), which is recorded rather than fatal."""
    return str(getattr(triton, "__version__", "unknown"))


@dataclass(frozen=True)
class FoundCommit:
    """The Triton commit, as far as it is known, and where it was found, in words."""

    commit: str  # a full SHA, or the abbreviation a source build's version holds
    source: str


def found_triton_commit(version: str | None = None) -> FoundCommit | None:
    """The Triton commit, when known, and where from: set by the CI build
    (PERFBOT_TRITON_COMMIT), in a source build's version (3.6.0+git7c56a5e4), or the tag commit
    of a release wheel."""
    if os.environ.get("PERFBOT_TRITON_COMMIT"):
        return FoundCommit(os.environ["PERFBOT_TRITON_COMMIT"], "the environment variable PERFBOT_TRITON_COMMIT")
    version = triton_version() if version is None else version
    match = re.search(r"\+git([0-9a-f]{7,40})", version)
    if match:
        return FoundCommit(match.group(1), f"the installed Triton's version, {version} (a build from source)")
    if version in RELEASE_COMMITS:
        return FoundCommit(
            RELEASE_COMMITS[version], f"Triton {version}, a release: the commit its v{version} tag points to"
        )
    return None


def triton_commit(version: str | None = None) -> str | None:
    """The Triton commit, when known (found_triton_commit)."""
    found = found_triton_commit(version)
    return found.commit if found is not None else None


def collect_environment(device: int | None = None) -> Environment:
    """Read the environment; works on a machine without a GPU (the GPU fields are then None).
    The GPU's state now is `gpu_state.after`; a run records its states before and after."""
    import torch  # here: `perfbot init` reads Triton's version above, and PyTorch takes seconds to import

    has_gpu = torch.cuda.is_available()
    props = torch.cuda.get_device_properties(device or 0) if has_gpu else None
    state, driver, nvml_error = _read_nvml(device or 0) if has_gpu else (None, None, "no CUDA GPU")
    return Environment(
        host=platform.node(),
        python=platform.python_version(),
        perfbot=__version__,
        torch=torch.__version__,
        cuda=torch.version.cuda,
        triton=triton_version(),
        triton_commit=triton_commit(),
        triton_path=os.path.dirname(getattr(triton, "__file__", None) or "unknown"),
        gpu_name=props.name if props else None,
        gpu_sm_count=props.multi_processor_count if props else None,
        gpu_memory_bytes=props.total_memory if props else None,
        gpu_l2_bytes=getattr(props, "L2_cache_size", None) if props else None,
        driver=driver,
        gpu_state=GpuStates(after=state),
        nvml_error=nvml_error,
    )


def _read_nvml(device: int) -> tuple[GpuState | None, str | None, str | None]:
    """(state, driver version, error). NVML failing is recorded, never fatal: timings stay valid."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = _nvml_handle(pynvml, device)
            driver = pynvml.nvmlSystemGetDriverVersion()
            reasons = pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)
            state = GpuState(
                sm_clock_mhz=pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                memory_clock_mhz=pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
                max_sm_clock_mhz=pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM),
                temperature_c=pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
                power_w=pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                power_limit_w=pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0,
                clock_event_reasons=list(clock_event_reasons(reasons)),
            )
        finally:
            pynvml.nvmlShutdown()
    except Exception as error:  # noqa: BLE001 -- pynvml raises NVMLError subclasses, or ImportError when absent
        return None, None, f"{type(error).__name__}: {error}"
    return state, driver if isinstance(driver, str) else driver.decode(), None


def _nvml_handle(pynvml: Any, device: int) -> Any:
    import torch

    # NVML numbers GPUs without CUDA_VISIBLE_DEVICES: find torch's device by its UUID.
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    if uuid is not None:
        try:
            return pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{uuid}")
        except pynvml.NVMLError:
            pass
    return pynvml.nvmlDeviceGetHandleByIndex(device)


def clock_event_reasons(bits: int) -> tuple[str, ...]:
    names = [name for bit, name in _CLOCK_EVENT_REASONS.items() if bits & bit]
    unknown = bits & ~sum(_CLOCK_EVENT_REASONS)
    if unknown:
        names.append(f"unknown_{unknown:#x}")
    return tuple(names)


class GpuMonitor:
    """NVML kept open for a whole run, read after every timing round (a few microseconds).
    Without NVML every read is empty: the timings stay valid, just unflagged."""

    def __init__(self, device: int = 0, nvml_gpu: str | int | None = None):
        self._device = device
        # A GPU this process does not use itself (a sharded A/B's workers do): its NVML UUID or
        # number, so that no CUDA call is needed to find it.
        self._nvml_gpu = nvml_gpu
        self._nvml: Any = None
        self._handle: Any = None

    def _find(self, pynvml: Any) -> Any:
        if isinstance(self._nvml_gpu, str):
            return pynvml.nvmlDeviceGetHandleByUUID(self._nvml_gpu)
        if isinstance(self._nvml_gpu, int):
            return pynvml.nvmlDeviceGetHandleByIndex(self._nvml_gpu)
        return _nvml_handle(pynvml, self._device)

    def __enter__(self) -> GpuMonitor:
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception:  # noqa: BLE001 -- no NVML here: reads stay empty, and the record says so (nvml_error)
            return self
        try:
            self._nvml, self._handle = pynvml, self._find(pynvml)
        except Exception:  # noqa: BLE001 -- no such GPU for NVML: reads stay empty
            self._nvml = None
            pynvml.nvmlShutdown()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._nvml is not None:
            self._nvml.nvmlShutdown()

    def read(self) -> Any:
        from .measure import Round

        if self._nvml is None:
            return Round()
        try:
            reasons = clock_event_reasons(self._nvml.nvmlDeviceGetCurrentClocksEventReasons(self._handle))
            clock = self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM)
        except Exception:  # noqa: BLE001 -- a failed read leaves the round unflagged, never the run
            return Round()
        return Round(tuple(r for r in reasons if r in THROTTLE_REASONS), clock)


def stability(rounds: list[Any]) -> dict[str, Any]:
    """What the rounds of a run say about the GPU, as Environment fields: how many were
    throttled, and whether the SM clock drifted between the first and the last round (compared
    only while loaded)."""
    record: dict[str, Any] = {"throttled_rounds": sum(bool(r.throttle_reasons) for r in rounds)}
    reasons = sorted({reason for r in rounds for reason in r.throttle_reasons})
    if reasons:
        record["throttle_reasons"] = reasons
    clocks = [r.sm_clock_mhz for r in rounds if r.sm_clock_mhz]
    if len(clocks) >= 2:
        change = 100 * (clocks[-1] / clocks[0] - 1)
        record["sm_clock_first_last_mhz"] = [clocks[0], clocks[-1]]
        if abs(change) > DRIFT_PERCENT:
            record["clock_drift"] = f"SM clock {clocks[0]} -> {clocks[-1]} MHz ({change:+.1f}%) during the run"
    return record


def stability_across(groups: list[list[Any]]) -> dict[str, Any]:
    """`stability` of several GPUs' rounds as one record: throttled rounds added up, reasons
    joined, and the clock of the GPU whose clock moved most (each GPU's first and last rounds
    compared with each other, never across GPUs)."""
    records = [stability(group) for group in groups if group] or [stability([])]
    merged: dict[str, Any] = {"throttled_rounds": sum(r["throttled_rounds"] for r in records)}
    reasons = sorted({reason for r in records for reason in r.get("throttle_reasons", [])})
    if reasons:
        merged["throttle_reasons"] = reasons
    moved = [r for r in records if "sm_clock_first_last_mhz" in r]
    if moved:
        worst = max(moved, key=lambda r: abs(r["sm_clock_first_last_mhz"][1] / r["sm_clock_first_last_mhz"][0] - 1))
        merged.update({k: worst[k] for k in ("sm_clock_first_last_mhz", "clock_drift") if k in worst})
    return merged
