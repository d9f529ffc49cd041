"""Data-parallel training speed vs number of workers with ``torch.distributed`` (DDP).

:func:`measure_cluster_speed` spawns ``world_size`` processes on this machine for each requested size (``gloo`` on
CPU, ``nccl`` on GPUs) and times synchronous data-parallel training steps of a model; rank 0 reports. On a real
multi-node cluster run the same code under ``torchrun`` (``python -m perfmodel.measure.ddp --model resnet-32 ...`` on
every node): it reads ``RANK``/``WORLD_SIZE``/``MASTER_ADDR`` from the environment (``env://``) and rank 0 appends its
rows to ``--out``.

Rows follow CM-DARE's cluster-size schema (``model``, ``gpu`` → ``device_name``, ``n_workers``, ``step``,
``speed_steps_per_s``) with ``n_ps = 0`` and ``mode = "ddp-allreduce"``: DDP averages gradients with all-reduce, where
CM-DARE's clusters used asynchronous parameter servers — a different protocol, recorded as such. A global step
processes ``n_workers × batch_size`` images.
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
import tempfile
import time

import numpy as np
import pandas as pd

__all__ = ["measure_cluster_speed", "CLUSTER_COLUMNS"]

CLUSTER_COLUMNS = ["model", "device_name", "n_workers", "n_ps", "mode", "backend", "batch_size", "step", "warmup", "step_time_s",
                   "speed_steps_per_s", "images_per_s", "torch_version", "cpu", "timestamp_utc"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, cfg: dict, out_file: str | None) -> pd.DataFrame | None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    from perfmodel.measure.timing import _resolve, _sync, environment

    backend = cfg["backend"]
    if not dist.is_initialized():
        dist.init_process_group(backend, rank=rank, world_size=world)
    try:
        torch.set_num_threads(cfg["threads"])
        device = f"cuda:{rank % max(torch.cuda.device_count(), 1)}" if backend == "nccl" else "cpu"
        torch.manual_seed(cfg["random_state"])
        name, net = _resolve(cfg["model"], device, torch.float32)
        model = DDP(net, device_ids=[int(device.split(":")[1])] if device.startswith("cuda") else None)
        g = torch.Generator().manual_seed(cfg["random_state"] + rank)
        x = torch.randn((cfg["batch_size"], *cfg["input_shape"]), generator=g).to(device)
        y = torch.randint(0, 10, (cfg["batch_size"],), generator=g).to(device)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        loss_fn = torch.nn.CrossEntropyLoss()
        times = []
        for _ in range(cfg["warmup"] + cfg["steps"]):
            dist.barrier()
            _sync(device)
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()  # DDP all-reduces the gradients during backward
            opt.step()
            _sync(device)
            dt = torch.tensor([time.perf_counter() - t0])
            dist.all_reduce(dt, op=dist.ReduceOp.MAX)  # a synchronous step ends when its slowest worker does
            times.append(float(dt))
        if rank != 0:
            return None
        env = environment(device)
        t = np.array(times)
        df = pd.DataFrame({"model": name, "device_name": env["device_name"], "n_workers": world, "n_ps": 0, "mode": "ddp-allreduce",
                           "backend": backend, "batch_size": cfg["batch_size"], "step": np.arange(len(t)), "warmup": np.arange(len(t)) < cfg["warmup"],
                           "step_time_s": t, "speed_steps_per_s": 1 / t, "images_per_s": world * cfg["batch_size"] / t,
                           "torch_version": env["torch_version"], "cpu": env["cpu"], "timestamp_utc": env["timestamp_utc"]})[CLUSTER_COLUMNS]
        if out_file:
            _save_result(df, out_file)
        return df
    finally:
        # Tear down together: a rank that destroys its group while a peer still talks to it can abort in gloo's
        # background threads ("terminate called without an active exception").
        try:
            dist.barrier()
        except Exception:  # noqa: BLE001 - a peer already failed; its error is the one to report
            pass
        dist.destroy_process_group()


def _save_result(frame: pd.DataFrame, out_file: str) -> None:
    """Rank 0's result, written whole or not at all (a temporary file moved into place; removed when anything fails)."""
    if os.path.isdir(out_file):
        raise IsADirectoryError(21, "Is a directory (expected the path of rank 0's result file; remove the folder or pass "
                                    "another path)", out_file)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(out_file)}.", suffix=".part", dir=os.path.dirname(out_file) or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            frame.to_pickle(f)
        os.replace(tmp, out_file)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def spawn_ranks(fn, args: tuple, nprocs: int, out_file: str) -> None:
    """``torch.multiprocessing.spawn`` of ``nprocs`` ranks whose rank 0 saves its result to ``out_file``
    (:func:`_save_result`).

    gloo can abort a rank in its background threads while the process group is torn down ("terminate called without
    an active exception", SIGABRT), after every rank has passed the final barrier. When rank 0's result is already
    saved whole, such an abort loses nothing: the result is kept and a ``RuntimeWarning`` says so. Any other failure,
    or an abort before the result exists, is raised as it is."""
    import warnings

    import torch.multiprocessing as mp
    from torch.multiprocessing.spawn import ProcessExitedException

    try:
        mp.spawn(fn, args=args, nprocs=nprocs, join=True)
    except ProcessExitedException as exc:
        if exc.signal_name != "SIGABRT" or not os.path.isfile(out_file):
            raise
        warnings.warn(f"rank {exc.error_index} aborted (SIGABRT) while gloo tore its process group down, after rank 0 had "
                      "saved the measurement; the measurement is kept.", RuntimeWarning, stacklevel=2)


def _spawn_entry(rank: int, world: int, cfg: dict, out_file: str) -> None:
    _worker(rank, world, cfg, out_file)


def measure_cluster_speed(model="resnet-15", input_shape=(3, 32, 32), *, world_sizes=(1, 2), batch_size: int = 32, steps: int = 5,
                          warmup: int = 2, backend: str = "gloo", threads: int = 1, random_state: int = 0,
                          progress: bool = False) -> pd.DataFrame:
    """Cluster speed vs number of data-parallel workers on this machine: one row per (world size, step).

    Parameters
    ----------
    model : str
        A zoo id (each process builds it; a module cannot be shipped to spawned processes).
    world_sizes : iterable of int
        Numbers of worker processes (each a separate ``torch.distributed`` group).
    backend : {'gloo', 'nccl'}
        ``gloo`` for CPU workers, ``nccl`` for one GPU per worker.
    threads : int
        Intra-op threads per worker (keep ``world × threads`` ≤ the cores).
    progress : bool
        A tqdm progress bar of the world sizes on stderr (each spawns its processes and builds the model in each).
    """
    if not isinstance(model, str):
        raise TypeError("measure_cluster_speed needs a zoo id (each worker process builds the model); got a "
                        f"{type(model).__name__}. For your own module, launch `python -m perfmodel.measure.ddp` under torchrun.")
    if backend not in ("gloo", "nccl"):
        raise ValueError(f"backend must be 'gloo' (CPU) or 'nccl' (GPU); got {backend!r}.")
    sizes = [int(w) for w in world_sizes]
    if not sizes or min(sizes) < 1:
        raise ValueError(f"world_sizes must be positive process counts; got {list(world_sizes)}.")
    from perfmodel.measure.timing import check_input_shape

    input_shape = check_input_shape(model, input_shape)
    cfg = dict(model=model, input_shape=tuple(input_shape), batch_size=int(batch_size), steps=int(steps), warmup=int(warmup), backend=backend,
               threads=int(threads), random_state=int(random_state))
    frames = []
    old = {k: os.environ.get(k) for k in ("MASTER_ADDR", "MASTER_PORT")}
    from tqdm.auto import tqdm

    try:
        for w in tqdm(sizes, desc=f"{model} ddp", unit="world size", disable=not progress, file=sys.stderr):
            os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(_free_port())
            with tempfile.TemporaryDirectory() as tmp:
                out = os.path.join(tmp, "rank0.pkl")
                spawn_ranks(_spawn_entry, (w, cfg, out), w, out)
                frames.append(pd.read_pickle(out))
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return pd.concat(frames, ignore_index=True)


def main(argv=None) -> int:  # pragma: no cover - exercised under torchrun
    """Entry point for ``torchrun ... -m perfmodel.measure.ddp``: every rank trains; rank 0 appends rows to ``--out``."""
    ap = argparse.ArgumentParser(prog="python -m perfmodel.measure.ddp", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet-32")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--backend", default="nccl" if os.environ.get("LOCAL_RANK") is not None and _has_cuda() else "gloo")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", required=True, help="CSV file the rows are appended to (atomically)")
    a = ap.parse_args(argv)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    cfg = dict(model=a.model, input_shape=(3, 32, 32), batch_size=a.batch_size, steps=a.steps, warmup=a.warmup, backend=a.backend,
               threads=a.threads, random_state=0)
    df = _worker(rank, world, cfg, None)
    if df is not None:
        from perfmodel.measure.store import append_rows

        append_rows(df, a.out)
    return 0


def _has_cuda() -> bool:  # pragma: no cover
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
