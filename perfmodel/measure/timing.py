"""Timing training steps and checkpoints of a torch model on a local device.

Timing rules (stated because step-time numbers are only comparable when they are):

* one training step = forward, cross-entropy loss on random labels, backward, optimizer step (SGD with momentum 0.9,
  as tensor2tensor's CIFAR setting), ``zero_grad``; inputs are synthetic (normal noise), drawn once per run;
* the clock is ``time.perf_counter``; on CUDA the device is synchronised before reading it (kernels run
  asynchronously), so a step's time includes all its kernels;
* the first ``warmup`` steps (allocator, cuDNN autotuning, lazy initialisation) are timed and reported with
  ``warmup=True`` but belong to no statistic;
* outlier rule: a timed step is flagged ``outlier=True`` when it exceeds the median of the non-warm-up steps by more
  than 5 × their median absolute deviation (MAD; at least 5 % of the median). Outliers are flagged, never dropped.
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
import time

import numpy as np
import pandas as pd

__all__ = ["environment", "measure_step_time", "measure_checkpoint_time", "check_checkpoint_path", "check_device", "check_input_shape",
           "flag_outliers", "STEP_COLUMNS", "CHECKPOINT_COLUMNS"]

#: Columns of :func:`measure_step_time` rows (the speed-sample schema of CM-DARE plus the environment).
STEP_COLUMNS = ["model", "device", "device_name", "batch_size", "input_shape", "step", "warmup", "step_time_s", "speed_steps_per_s",
                "images_per_s", "outlier", "threads", "precision", "optimizer", "torch_version", "python_version", "cpu", "timestamp_utc"]
#: Columns of :func:`measure_checkpoint_time` rows (CM-DARE's checkpoint schema: size and duration, plus the environment).
CHECKPOINT_COLUMNS = ["model", "repetition", "checkpoint_mb", "weight_file_mb", "duration_s", "device", "storage", "torch_version",
                      "python_version", "cpu", "timestamp_utc"]


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device: str = "cpu") -> dict:
    """Where a measurement ran: device name, torch and Python versions, CPU model, threads, UTC timestamp."""
    import torch

    dev = torch.device(device)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"CPU: {_cpu_name()}"
    return dict(device=str(dev), device_name=name, torch_version=torch.__version__, python_version=platform.python_version(), cpu=_cpu_name(),
                threads=torch.get_num_threads(), timestamp_utc=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))


def flag_outliers(times, warmup_mask) -> np.ndarray:
    """The outlier rule of this module: time > median + max(5 MAD, 5 % of the median), over the non-warm-up steps."""
    t = np.asarray(times, dtype=float)
    w = np.asarray(warmup_mask, dtype=bool)
    timed = t[~w]
    if timed.size == 0:
        return np.zeros_like(t, dtype=bool)
    med = float(np.median(timed))
    mad = float(np.median(np.abs(timed - med)))
    return (~w) & (t > med + max(5 * mad, 0.05 * med))


def check_device(device) -> str:
    """The canonical spelling of a usable torch device (``"cpu"``, ``"cuda:0"`` ...), or a ValueError saying why it is
    not usable here (no CUDA build or no GPU, an index beyond the GPUs present, an unknown device type)."""
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1'; got {device!r} ({exc}).") from None
    if dev.type == "cpu":
        return str(dev)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            why = ("this torch build has no CUDA support" if torch.version.cuda is None else "no CUDA GPU is visible (check the driver "
                   "and CUDA_VISIBLE_DEVICES)")
            raise ValueError(f"device {device!r} is not available: {why} (torch {torch.__version__}). Use device 'cpu' "
                             "(--device cpu), or install a CUDA build of torch on a machine with an NVIDIA GPU.")
        n = torch.cuda.device_count()
        if dev.index is not None and dev.index >= n:
            raise ValueError(f"device {device!r} is not available: this machine has {n} CUDA GPU(s), 'cuda:0' to 'cuda:{n - 1}'.")
        return str(dev)
    if dev.type == "meta":
        raise ValueError("device 'meta' holds no data and cannot be timed; use 'cpu' or 'cuda'.")
    try:
        torch.empty(1, device=dev)
    except Exception as exc:  # mps, xpu ... absent on this machine
        raise ValueError(f"device {device!r} is not available on this machine ({type(exc).__name__}: {exc}); use 'cpu'.") from None
    return str(dev)


def check_input_shape(model, input_shape) -> tuple:
    """One sample's shape as a tuple of positive ints, checked against a zoo model's expected (channels, height,
    width) with 3 channels; a ValueError says what is wrong and what is expected."""
    try:
        shape = tuple(int(d) for d in input_shape)
        ok = all(int(d) == d for d in input_shape)
    except (TypeError, ValueError):
        ok = False
    if not ok or not shape or any(d < 1 for d in shape):
        raise ValueError(f"input_shape must be one sample's shape as positive integers without the batch dimension, e.g. (3, 32, 32); "
                         f"got {input_shape!r}.")
    if isinstance(model, str):
        from perfmodel.datasets import canonical_model

        name = canonical_model(model)
        if len(shape) != 3 or shape[0] != 3:
            raise ValueError(f"input_shape {shape} does not fit the zoo CNN {name!r}: expected (3, height, width) — 3 colour channels, "
                             "e.g. (3, 32, 32) for CIFAR-10 (--input-shape 3,32,32).")
    return shape


def _resolve(model, device, dtype):
    import torch

    if isinstance(model, str):
        from perfmodel import zoo
        from perfmodel.datasets import canonical_model

        name = canonical_model(model)
        net = zoo.build(name)
    elif isinstance(model, torch.nn.Module):
        name, net = type(model).__name__, model
    else:
        raise TypeError(f"model must be a zoo id (e.g. 'resnet-32') or a torch.nn.Module; got {type(model).__name__}.")
    return name, net.to(device=device, dtype=dtype)


def _sync(device):
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


_PRECISIONS = {"float32": "float32", "float64": "float64", "bfloat16": "bfloat16", "float16": "float16"}


def measure_step_time(model, input_shape=(3, 32, 32), *, batch_size: int = 128, device: str = "cpu", steps: int = 20, warmup: int = 3,
                      optimizer: str = "sgd-momentum", threads: int | None = None, precision: str = "float32", num_classes: int = 10,
                      time_budget_s: float | None = None, random_state: int = 0, progress: bool = False) -> pd.DataFrame:
    """Time ``warmup + steps`` training steps; one row per step (:data:`STEP_COLUMNS`).

    Parameters
    ----------
    model : str or torch.nn.Module
        A zoo id or a module whose output is ``(batch, num_classes)`` logits. A module is trained in place (its
        weights change): pass a copy if that matters.
    input_shape : tuple of int
        One sample's shape.
    batch_size, steps, warmup : int
    device : str
        ``"cpu"``, ``"cuda"``, ``"cuda:1"`` ...
    optimizer : {'sgd-momentum', 'sgd', 'adam'}
    threads : int, optional
        ``torch.set_num_threads`` for the run (restored afterwards).
    precision : {'float32', 'float64', 'bfloat16', 'float16'}
        Parameter and input dtype.
    time_budget_s : float, optional
        Stop timing (after at least one timed step) once the next step would take the timed steps past this many
        seconds: ``steps`` is then a maximum.
    random_state : int
        Seed of the inputs, labels and initial weights of a zoo model.
    progress : bool
        Show a progress bar of the steps (tqdm, on stderr).

    Returns
    -------
    DataFrame
        One row per step: ``step`` (0-based), ``warmup``, ``step_time_s``, ``speed_steps_per_s``, ``images_per_s``,
        ``outlier`` (see the module's rule) and the environment.
    """
    import torch

    if steps < 1 or warmup < 0 or batch_size < 1:
        raise ValueError(f"steps and batch_size must be ≥ 1 and warmup ≥ 0; got steps={steps}, warmup={warmup}, batch_size={batch_size}.")
    if precision not in _PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(_PRECISIONS)}; got {precision!r}.")
    if optimizer not in ("sgd-momentum", "sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd-momentum', 'sgd' or 'adam'; got {optimizer!r}.")
    device = check_device(device)
    input_shape = check_input_shape(model, input_shape)
    dtype = getattr(torch, _PRECISIONS[precision])
    old_threads = torch.get_num_threads()
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be ≥ 1; got {threads}.")
        torch.set_num_threads(int(threads))
    try:
        torch.manual_seed(random_state)
        name, net = _resolve(model, device, dtype)
        net.train()
        g = torch.Generator(device="cpu").manual_seed(random_state)
        x = torch.randn((batch_size, *input_shape), generator=g).to(device=device, dtype=dtype)
        y = torch.randint(0, num_classes, (batch_size,), generator=g).to(device)
        params = [p for p in net.parameters() if p.requires_grad]
        opt = (torch.optim.SGD(params, lr=0.01, momentum=0.9) if optimizer == "sgd-momentum" else torch.optim.SGD(params, lr=0.01)
               if optimizer == "sgd" else torch.optim.Adam(params, lr=1e-3))
        loss_fn = torch.nn.CrossEntropyLoss()
        times = []
        from tqdm.auto import tqdm

        bar = tqdm(total=warmup + steps, desc=f"{name} b={batch_size}", unit="step", disable=not progress, file=sys.stderr)
        for i in range(warmup + steps):
            if time_budget_s is not None and i > warmup and sum(times[warmup:]) + times[-1] > time_budget_s:
                break
            _sync(device)
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            out = net(x)
            loss = loss_fn(out.float(), y)
            loss.backward()
            opt.step()
            _sync(device)
            times.append(time.perf_counter() - t0)
            bar.update(1)
            bar.set_postfix_str(f"{times[-1]:.3g} s" + (" (warm-up)" if i < warmup else ""))
        bar.close()
        env = environment(device)
    finally:
        torch.set_num_threads(old_threads)
    t = np.array(times)
    wm = np.arange(len(t)) < warmup
    df = pd.DataFrame({"model": name, "device": env["device"], "device_name": env["device_name"], "batch_size": batch_size,
                       "input_shape": "x".join(map(str, input_shape)), "step": np.arange(len(t)), "warmup": wm, "step_time_s": t,
                       "speed_steps_per_s": 1 / t, "images_per_s": batch_size / t, "outlier": flag_outliers(t, wm),
                       "threads": int(threads) if threads is not None else old_threads, "precision": precision, "optimizer": optimizer,
                       "torch_version": env["torch_version"], "python_version": env["python_version"], "cpu": env["cpu"],
                       "timestamp_utc": env["timestamp_utc"]})
    return df[STEP_COLUMNS]


def check_checkpoint_path(path, *, overwrite: bool = False) -> str:
    """Raise now the error :func:`measure_checkpoint_time` would raise for ``path`` (nothing is written).

    Refused: a symbolic link (never followed, even with ``overwrite``), a folder, a path whose folder is missing or
    not writable, and an existing file unless ``overwrite=True``. Returns the path as a string.
    """
    path = os.fspath(path)
    if os.path.islink(path):
        raise FileExistsError(17, "File exists and is a symbolic link (a checkpoint is never written through a link: its target "
                                  "would be overwritten). Choose another path, or omit it to use a private temporary folder", path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory (expected the path of a checkpoint file to write, e.g. "
                                    f"{os.path.join(path, 'checkpoint.pt')}, or no path: a private temporary folder)", path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(2, "No such folder for the checkpoint file (create the folder first, or choose another path)", folder)
    if not os.access(folder, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        raise PermissionError(13, "Permission denied (the checkpoint's folder is not writable; choose another path)", folder)
    if os.path.lexists(path) and not overwrite:
        raise FileExistsError(17, "File exists (the checkpoint timer writes and then removes this file, so it refuses to replace a "
                                  "file it did not create: pass overwrite=True / --overwrite to replace it, choose a new path, or "
                                  "omit the path to use a private temporary folder)", path)
    return path


def measure_checkpoint_time(model, path=None, *, repeats: int = 5, storage: str = "local disk", overwrite: bool = False,
                            random_state: int = 0) -> pd.DataFrame:
    """Time ``torch.save`` of the model's state dict plus SGD-momentum slots (what TensorFlow's Saver writes for
    CM-DARE: variables + Momentum) to a file, once per repetition; the file is removed at the end.

    Parameters
    ----------
    model : str or torch.nn.Module
        A zoo id (any spelling; rows carry the canonical id) or a module.
    path : path, optional
        The checkpoint file. Default: ``checkpoint.pt`` in a private temporary folder (``tempfile.mkdtemp``, mode
        0700) removed afterwards. An explicit path must not exist (unless ``overwrite=True``), must not be a symbolic
        link (never followed, even with ``overwrite``) and must be in an existing, writable folder; see
        :func:`check_checkpoint_path`.
    repeats : int
    storage : str
        Your label of where the file is (CM-DARE uploaded to cloud storage; this writes to a local file system).
    overwrite : bool
        Replace (and in the end remove) an existing file at ``path``.

    Returns
    -------
    DataFrame
        One row per repetition (:data:`CHECKPOINT_COLUMNS`): ``checkpoint_mb`` (file size, MiB), ``weight_file_mb``
        (tensor bytes, MiB), ``duration_s`` (open + save + fsync, s).
    """
    import tempfile

    import torch

    if repeats < 1:
        raise ValueError(f"repeats must be ≥ 1; got {repeats}.")
    with tempfile.TemporaryDirectory(prefix="perfmodel-checkpoint-") as private:
        if path is None:
            path = os.path.join(private, "checkpoint.pt")
        else:
            path = check_checkpoint_path(path, overwrite=overwrite)
        torch.manual_seed(random_state)
        name, net = _resolve(model, "cpu", torch.float32)
        momentum = {n: torch.zeros_like(p) for n, p in net.named_parameters() if p.requires_grad}
        state = {"model": net.state_dict(), "momentum": momentum}
        tensor_bytes = (sum(t.numel() * t.element_size() for t in net.state_dict().values())
                        + sum(t.numel() * t.element_size() for t in momentum.values()))
        nofollow = getattr(os, "O_NOFOLLOW", 0)
        # The first open creates the file exclusively (a file or link planted since the check is refused); with overwrite
        # an existing regular file is truncated. Later repetitions truncate the file this call wrote. Links never followed.
        flags = os.O_WRONLY | os.O_CREAT | nofollow | (os.O_TRUNC if overwrite else os.O_EXCL)
        ours = None
        rows = []
        try:
            for i in range(repeats):
                t0 = time.perf_counter()
                fd = os.open(path, flags, 0o666)
                with os.fdopen(fd, "wb") as f:
                    st = os.fstat(f.fileno())
                    if ours is not None and (st.st_dev, st.st_ino) != ours:
                        raise FileExistsError(17, "File replaced by another process during the measurement", path)
                    ours = (st.st_dev, st.st_ino)
                    torch.save(state, f)
                    f.flush()
                    os.fsync(f.fileno())
                dt = time.perf_counter() - t0
                flags = os.O_WRONLY | os.O_TRUNC | nofollow
                rows.append(dict(model=name, repetition=i, checkpoint_mb=os.path.getsize(path) / 2**20,
                                 weight_file_mb=tensor_bytes / 2**20, duration_s=dt))
        finally:
            try:  # remove the file this call wrote, and nothing else
                st = os.lstat(path)
                if ours is not None and (st.st_dev, st.st_ino) == ours:
                    os.unlink(path)
            except OSError:
                pass
    env = environment("cpu")
    df = pd.DataFrame(rows).assign(device="cpu", storage=storage, torch_version=env["torch_version"],
                                   python_version=env["python_version"], cpu=env["cpu"], timestamp_utc=env["timestamp_utc"])
    return df[CHECKPOINT_COLUMNS]
