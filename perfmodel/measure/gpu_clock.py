"""What a GPU's clock and power did while it was timed: background samples of the SM clock, the power draw, the
enforced power limit and the temperature of one CUDA device.

Why: a part held at its power limit by continuous GEMM load runs below the boost clock its datasheet peaks are quoted
at (:func:`perfmodel.step.kernels.sustained_clock`), and a step time measured without its clock cannot tell a slow
kernel from a throttled part. :class:`ClockSampler` reads the device through NVML (``pynvml``, the module of the
``nvidia-ml-py`` package) or, where that module is missing, a streaming ``nvidia-smi --query-gpu ... -lms`` process;
on a CPU, or a machine with neither, it samples nothing and says why in :attr:`ClockSampler.source` (rows then carry
empty clock cells and that reason, never made-up values).

Timestamps are ``time.perf_counter`` seconds, the clock the step and GEMM timers read, so that
:meth:`ClockSampler.window` gives the samples taken while one step or one GEMM loop ran.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time

import numpy as np
import pandas as pd

__all__ = ["ClockSampler", "CLOCK_FIELDS", "SAMPLE_INTERVAL_S"]

#: Seconds between two samples (NVML answers in ~0.1 ms; nvidia-smi's ``-lms`` takes milliseconds, at least 1).
SAMPLE_INTERVAL_S = 0.05

#: What :meth:`ClockSampler.window` returns (and the measurement rows carry): the median SM clock (MHz) and power
#: draw (W) of the samples in the window, their highest temperature (°C), how many there were, the enforced power
#: limit (W) and the sampler's source.
CLOCK_FIELDS = ("sm_clock_mhz", "power_w", "temperature_c", "clock_samples", "power_limit_w", "clock_source")


def _cuda_index(device) -> int | None:
    """The CUDA index of a torch device (``cuda`` is the current device), None for any other device type."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        return None
    return int(dev.index) if dev.index is not None else int(torch.cuda.current_device())


def _device_uuid(index: int) -> str | None:
    """NVML's spelling (``GPU-xxxxxxxx-...``) of the UUID torch reports for CUDA device ``index``, or None."""
    try:
        import torch

        uuid = str(torch.cuda.get_device_properties(index).uuid)
    except Exception:  # noqa: BLE001 - older torch without the field, or no CUDA
        return None
    return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"


def _physical_index(index: int) -> int:
    """The index NVML and nvidia-smi give CUDA device ``index`` when ``CUDA_VISIBLE_DEVICES`` lists numbers."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    parts = [p.strip() for p in visible.split(",") if p.strip()]
    if parts and all(p.isdigit() for p in parts) and index < len(parts):
        return int(parts[index])
    return index


class ClockSampler:
    """Samples one CUDA GPU's SM clock, power draw and temperature every ``interval_s`` in a background thread.

    Use as a context manager around the timed work (``with ClockSampler("cuda") as clocks: ...``), then
    :meth:`window` for the samples of a time span, :attr:`samples` for all of them.

    Parameters
    ----------
    device : str or torch.device
        The device being timed. Anything but a CUDA device is sampled by nobody (:attr:`source` says so).
    interval_s : float
        Seconds between samples (default :data:`SAMPLE_INTERVAL_S`), in (0, 10].

    Attributes
    ----------
    source : str
        ``"nvml"``, ``"nvidia-smi"``, or ``"none: <why>"`` (a CPU device, neither NVML nor nvidia-smi available, the
        device not found by them).
    power_limit_w : float
        The enforced power limit (W) the source reported, NaN when nothing was sampled.
    """

    def __init__(self, device="cuda", *, interval_s: float = SAMPLE_INTERVAL_S):
        if isinstance(interval_s, bool) or not isinstance(interval_s, (int, float)) or not 0 < float(interval_s) <= 10:
            raise ValueError(f"interval_s must be seconds between samples in (0, 10]; got {interval_s!r}.")
        self.interval_s = float(interval_s)
        self.index = _cuda_index(device)
        self.source = "none: not a CUDA device (no GPU clock to sample)" if self.index is None else ""
        self.power_limit_w = float("nan")
        self._rows: list[tuple] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen | None = None
        self._nvml_module = None

    # ------------------------------------------------------------------ sources
    def _nvml(self):
        """(module, handle) of NVML for this device, or None (the reason recorded in ``self._why``)."""
        try:
            import pynvml
        except ImportError:
            self._why.append("no NVML module (pip install nvidia-ml-py)")
            return None
        try:
            pynvml.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - pynvml.NVMLError and friends
            self._why.append(f"NVML did not start ({type(exc).__name__}: {exc})")
            return None
        uuid = _device_uuid(self.index)
        handle = None
        if uuid:
            try:
                handle = pynvml.nvmlDeviceGetHandleByUUID(uuid)
            except Exception:  # noqa: BLE001
                handle = None
        if handle is None:
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(_physical_index(self.index))
            except Exception as exc:  # noqa: BLE001
                self._why.append(f"NVML has no device for cuda:{self.index} ({type(exc).__name__}: {exc})")
                return None
        try:
            self.power_limit_w = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000.0
        except Exception:  # noqa: BLE001 - some parts do not report it
            self.power_limit_w = float("nan")
        return pynvml, handle

    def _nvml_loop(self, nvml, handle) -> None:
        clock_sm = getattr(nvml, "NVML_CLOCK_SM", 1)
        gpu_sensor = getattr(nvml, "NVML_TEMPERATURE_GPU", 0)
        while not self._stop.is_set():
            t = time.perf_counter()
            try:
                mhz = float(nvml.nvmlDeviceGetClockInfo(handle, clock_sm))
                watts = nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0
                temp = float(nvml.nvmlDeviceGetTemperature(handle, gpu_sensor))
                self._rows.append((t, mhz, watts, temp))
            except Exception:  # noqa: BLE001 - a failed read is a missing sample, never a made-up one
                pass
            self._stop.wait(self.interval_s)

    def _smi_start(self) -> bool:
        exe = shutil.which("nvidia-smi")
        if exe is None:
            self._why.append("no nvidia-smi on PATH")
            return False
        who = _device_uuid(self.index) or str(_physical_index(self.index))
        cmd = [exe, f"--id={who}", "--query-gpu=clocks.sm,power.draw,temperature.gpu,power.limit",
               "--format=csv,noheader,nounits", f"-lms={max(1, int(round(self.interval_s * 1000)))}"]
        try:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        except OSError as exc:
            self._why.append(f"nvidia-smi did not start ({exc})")
            return False
        return True

    def _smi_loop(self) -> None:
        for line in self._proc.stdout:  # one line per sample; stamped on arrival
            t = time.perf_counter()
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 4:
                continue
            try:
                mhz, watts, temp, limit = (float(p) for p in parts[:4])
            except ValueError:  # "[N/A]" or "[Not Supported]": a missing sample
                continue
            self._rows.append((t, mhz, watts, temp))
            self.power_limit_w = limit
            if self._stop.is_set():
                break

    # ------------------------------------------------------------------ context
    def start(self) -> "ClockSampler":
        if self.index is None or self._thread is not None:
            return self
        self._why: list[str] = []
        got = self._nvml()
        if got is not None:
            self.source = "nvml"
            self._nvml_module = got[0]
            self._thread = threading.Thread(target=self._nvml_loop, args=got, daemon=True)
        elif self._smi_start():
            self.source = "nvidia-smi"
            self._thread = threading.Thread(target=self._smi_loop, daemon=True)
        else:
            self.source = "none: " + "; ".join(self._why)
            return self
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._nvml_module is not None:
            try:
                self._nvml_module.nvmlShutdown()
            except Exception:  # noqa: BLE001 - nothing to undo
                pass
            self._nvml_module = None

    def __enter__(self) -> "ClockSampler":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ results
    @property
    def samples(self) -> pd.DataFrame:
        """Every sample: ``t`` (``time.perf_counter`` seconds), ``sm_clock_mhz``, ``power_w``, ``temperature_c``."""
        return pd.DataFrame(list(self._rows), columns=["t", "sm_clock_mhz", "power_w", "temperature_c"])

    def window(self, t0: float, t1: float) -> dict:
        """:data:`CLOCK_FIELDS` of the samples taken in ``[t0, t1]`` (``time.perf_counter`` seconds): the median SM
        clock and power, the highest temperature, their number; NaN medians (and 0 samples) when none fell in it."""
        s = self.samples
        s = s[(s["t"] >= t0) & (s["t"] <= t1)]
        n = len(s)
        return dict(sm_clock_mhz=float(np.median(s["sm_clock_mhz"])) if n else float("nan"),
                    power_w=float(np.median(s["power_w"])) if n else float("nan"),
                    temperature_c=float(s["temperature_c"].max()) if n else float("nan"), clock_samples=int(n),
                    power_limit_w=float(self.power_limit_w), clock_source=self.source)
