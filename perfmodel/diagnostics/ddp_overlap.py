"""Does DDP overlap its gradient all-reduce with the backward pass on this machine? A check of the data-parallel model
of :mod:`perfmodel.step.parallel` where it can be checked here: ``gloo`` processes on the CPU.

:func:`check_ddp_overlap`

1. measures the link: ``torch.distributed.all_reduce`` of float32 tensors of several sizes between two ``gloo``
   processes (:func:`measure_allreduce`), and fits the α–β cost of a two-process ring all-reduce,
   ``t = S/B + 2α``, by non-negative least squares on the relative error (:func:`fit_link`) — bandwidth and latency
   of local gloo are measured, never assumed;
2. times forward and backward passes of the model on one process (the backward time the buckets are produced over);
3. times DDP training steps on 1 and 2 processes with :func:`perfmodel.measure.measure_cluster_speed` (the per-process
   batch is the same, so the increase from 1 to 2 processes is what communication adds);
4. predicts that increase with :func:`perfmodel.step.parallel.exposed_bucket_allreduce` on the measured link, with
   DDP's bucket overlap and without it (all-reduce after the backward pass), and says which of the two the
   measurement is closer to (:func:`overlap_verdict`), or ``"neither"`` when the step grew by far more than any
   all-reduce could add (the processes competed for cores).

On a CPU the all-reduce runs on gloo's threads and competes with the backward pass for the same cores: the check says
what happens on this machine, not on GPUs, whose all-reduce runs on its own stream (and, with NCCL, its own SMs).
``python -m perfmodel.diagnostics.ddp_overlap --out datasets/measurements/ddp_overlap.csv`` appends one run's row and
its provenance to the measurement folder's README.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["measure_allreduce", "fit_link", "predict_ddp_overlap", "overlap_verdict", "check_ddp_overlap", "ALLREDUCE_COLUMNS",
           "OVERLAP_COLUMNS"]

#: columns of :func:`measure_allreduce`.
ALLREDUCE_COLUMNS = ["world_size", "bytes", "repeat", "time_s"]
#: columns of :func:`check_ddp_overlap`.
OVERLAP_COLUMNS = ["model", "batch_size", "threads", "steps", "param_count", "grad_bytes", "n_buckets", "forward_s", "backward_s",
                   "link_bandwidth_gb_per_s", "link_latency_s", "measured_step_1_s", "measured_step_2_s", "measured_increase_s",
                   "predicted_overlap_s", "predicted_no_overlap_s", "predicted_comm_total_s", "supports", "torch_version", "cpu",
                   "timestamp_utc"]


def _allreduce_worker(rank: int, world: int, cfg: dict, out_file: str) -> None:
    import torch
    import torch.distributed as dist

    from perfmodel.measure.ddp import _save_result

    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        torch.set_num_threads(cfg["threads"])
        rows = []
        for nbytes in cfg["sizes"]:
            x = torch.ones(max(int(nbytes) // 4, 1), dtype=torch.float32)
            for r in range(cfg["warmup"] + cfg["repeats"]):
                dist.barrier()
                t0 = time.perf_counter()
                dist.all_reduce(x)
                dt_ = torch.tensor([time.perf_counter() - t0])
                dist.all_reduce(dt_, op=dist.ReduceOp.MAX)  # the collective ends when its slowest rank does
                if r >= cfg["warmup"]:
                    rows.append((world, int(x.numel() * 4), r - cfg["warmup"], float(dt_)))
        if rank == 0:
            _save_result(pd.DataFrame(rows, columns=ALLREDUCE_COLUMNS), out_file)
    finally:
        try:
            dist.barrier()
        except Exception:  # noqa: BLE001 - a peer already failed; its error is the one to report
            pass
        dist.destroy_process_group()


def _check_sizes(sizes_bytes) -> list[int]:
    sizes = list(sizes_bytes) if hasattr(sizes_bytes, "__iter__") else [sizes_bytes]
    if len(sizes) < 2 or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 4 for s in sizes) \
            or len(set(sizes)) < 2:
        raise ValueError(f"sizes_bytes must hold at least two different message sizes of at least 4 bytes (ints), to fit "
                         f"bandwidth and latency; got {sizes_bytes!r}. E.g. sizes_bytes=(2**12, 2**20, 2**24).")
    return [int(s) for s in sizes]


def _check_count(name, v, low=1):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise ValueError(f"{name} must be an int >= {low}; got {v!r}.")
    return int(v)


def measure_allreduce(sizes_bytes=(2**12, 2**16, 2**20, 2**22, 2**24), *, world_size: int = 2, repeats: int = 5, warmup: int = 2,
                      threads: int = 1) -> pd.DataFrame:
    """Time ``torch.distributed.all_reduce`` of float32 tensors between ``world_size`` ``gloo`` processes on this
    machine: one row per (size, repetition), :data:`ALLREDUCE_COLUMNS` (``time_s`` the slowest rank's).

    Raises
    ------
    ValueError
        Fewer than two distinct sizes, a size under 4 bytes, ``world_size < 2``, ``repeats < 1`` or ``warmup < 0``.
    """
    from perfmodel.measure.ddp import _free_port, spawn_ranks

    sizes = _check_sizes(sizes_bytes)
    world = _check_count("world_size", world_size, 2)
    cfg = dict(sizes=sizes, repeats=_check_count("repeats", repeats), warmup=_check_count("warmup", warmup, 0),
               threads=_check_count("threads", threads))
    old = {k: os.environ.get(k) for k in ("MASTER_ADDR", "MASTER_PORT")}
    try:
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(_free_port())
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "allreduce.pkl")
            spawn_ranks(_allreduce_worker, (world, cfg, out), world, out)
            return pd.read_pickle(out)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def fit_link(frame: pd.DataFrame, *, name: str = "gloo (this machine, measured)"):
    """The :class:`perfmodel.step.parallel.Interconnect` whose ring all-reduce cost
    ``2(n−1)/n · S/B + 2(n−1)α`` (efficiency 1: ``B`` is the bandwidth gloo reaches) best fits the median times of
    :func:`measure_allreduce`'s rows, by non-negative least squares on the relative error (each size weighs the same,
    small messages fix α, large ones ``B``; ``scipy.optimize.nnls``).

    Raises
    ------
    ValueError
        ``frame`` lacks :data:`ALLREDUCE_COLUMNS`, mixes world sizes, has fewer than two sizes, or the fit finds no
        bandwidth (time does not grow with size: the measurement drowned in noise; measure larger sizes).
    """
    from scipy.optimize import nnls

    from perfmodel.step.collectives import Interconnect

    if not isinstance(frame, pd.DataFrame) or not set(ALLREDUCE_COLUMNS) <= set(frame.columns):
        raise ValueError(f"fit_link needs the rows of measure_allreduce (columns {ALLREDUCE_COLUMNS}).")
    worlds = frame["world_size"].unique()
    if len(worlds) != 1:
        raise ValueError(f"fit_link fits one world size at a time; got world sizes {sorted(worlds.tolist())}. Select one.")
    med = frame.groupby("bytes")["time_s"].median()
    if len(med) < 2:
        raise ValueError(f"fit_link needs at least two message sizes; got {len(med)}. Measure e.g. sizes_bytes=(2**12, 2**24).")
    n = int(worlds[0])
    s = med.index.to_numpy(float)
    t = med.to_numpy(float)
    # t = [2(n-1)/n * S, 2(n-1)] @ [1/B, alpha], each row divided by t (relative error)
    a = np.column_stack([2 * (n - 1) / n * s, np.full_like(s, 2 * (n - 1))]) / t[:, None]
    (inv_b, alpha), _ = nnls(a, np.ones_like(t))
    if inv_b <= 0:
        raise ValueError(f"fit_link: all-reduce time does not grow with message size (medians {dict(zip(s.astype(int), t))}); "
                         "no bandwidth can be fitted. Expected larger messages to take longer: measure larger sizes or "
                         "more repeats on a quieter machine.")
    return Interconnect(name, bandwidth_gb_per_s=1 / inv_b / 1e9, latency_s=float(alpha), efficiency=1.0)


def predict_ddp_overlap(backward_s: float, grad_bytes: float, link, *, n: int = 2) -> dict:
    """Predicted exposed gradient all-reduce of DDP on ``n`` processes, with bucket overlap and without:
    ``{"predicted_overlap_s", "predicted_no_overlap_s", "predicted_comm_total_s", "n_buckets"}``
    (:func:`perfmodel.step.parallel.exposed_bucket_allreduce`)."""
    from perfmodel.step.parallel import bucket_sizes, exposed_bucket_allreduce

    for what, v in (("backward_s", backward_s), ("grad_bytes", grad_bytes)):
        if isinstance(v, bool) or not isinstance(v, (int, float, np.number)) or not np.isfinite(v) or v < 0:
            raise ValueError(f"{what} must be a non-negative finite number; got {v!r}.")
    ov, total = exposed_bucket_allreduce(float(backward_s), float(grad_bytes), n, link, overlap=True)
    no, _ = exposed_bucket_allreduce(float(backward_s), float(grad_bytes), n, link, overlap=False)
    return dict(predicted_overlap_s=ov, predicted_no_overlap_s=no, predicted_comm_total_s=total,
                n_buckets=int(len(bucket_sizes(float(grad_bytes)))))


def overlap_verdict(measured_increase_s: float, predicted_overlap_s: float, predicted_no_overlap_s: float, *,
                    tolerance: float = 2.0) -> str:
    """Which prediction the measured increase of the step time (1 → 2 processes) supports.

    ``"neither"`` when the increase is more than ``tolerance`` × the non-overlapped all-reduce (the most communication
    can add): something else slowed the processes down — on a CPU, the two processes competing for cores with each
    other or with other work. Otherwise ``"overlap"`` or ``"no overlap"``, the prediction closer to the measurement,
    and ``"undecided"`` when both are equally close (equal predictions: a single bucket, or a backward pass too short
    to hide anything).

    Raises
    ------
    ValueError
        A non-finite number, or ``tolerance < 1``.
    """
    vals = [float(measured_increase_s), float(predicted_overlap_s), float(predicted_no_overlap_s), float(tolerance)]
    if not np.isfinite(vals).all():
        raise ValueError(f"overlap_verdict needs finite seconds; got measured {measured_increase_s!r}, predicted "
                         f"{predicted_overlap_s!r} (overlap) and {predicted_no_overlap_s!r} (no overlap).")
    if tolerance < 1:
        raise ValueError(f"tolerance must be >= 1 (a factor on the non-overlapped all-reduce); got {tolerance!r}.")
    meas, ov, no, _ = vals
    if meas > tolerance * max(no, ov):
        return "neither"
    a, b = abs(meas - ov), abs(meas - no)
    if np.isclose(a, b, rtol=1e-9, atol=1e-12):
        return "undecided"
    return "overlap" if a < b else "no overlap"


def _time_passes(model, input_shape, batch_size, threads, repeats, random_state) -> tuple[float, float, int]:
    """Median forward and backward seconds of ``model`` on this CPU, and its parameter count."""
    import torch

    from perfmodel.measure.timing import _resolve

    old = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(random_state)
        _, net = _resolve(model, "cpu", torch.float32)
        g = torch.Generator().manual_seed(random_state)
        x = torch.randn((batch_size, *input_shape), generator=g)
        y = torch.randint(0, 10, (batch_size,), generator=g)
        loss_fn = torch.nn.CrossEntropyLoss()
        fw, bw = [], []
        for r in range(repeats + 1):
            net.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            loss = loss_fn(net(x), y)
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            if r:  # the first pass warms the allocator up
                fw.append(t1 - t0)
                bw.append(t2 - t1)
        n_params = int(sum(p.numel() for p in net.parameters() if p.requires_grad))
        return float(np.median(fw)), float(np.median(bw)), n_params
    finally:
        torch.set_num_threads(old)


def check_ddp_overlap(model: str = "shake-shake-80", input_shape=(3, 32, 32), *, batch_size: int = 4, steps: int = 5, warmup: int = 2,
                      threads: int = 1, sizes_bytes=(2**12, 2**16, 2**20, 2**22, 2**24), repeats: int = 5,
                      random_state: int = 0) -> pd.DataFrame:
    """Measure DDP on 1 and 2 ``gloo`` processes and say whether the increase of the step time is the overlapped or the
    non-overlapped gradient all-reduce of :mod:`perfmodel.step.parallel` (see the module docstring).

    Parameters
    ----------
    model : str
        A zoo id (each process builds it). Default Shake-Shake-80: 73 MB of gradients in four DDP buckets, so overlap
        (only the last bucket exposed) and no overlap differ by about a factor 3.
    input_shape : tuple of int
        One sample.
    batch_size : int
        Samples per process per step.
    steps, warmup : int
        Timed and warm-up DDP steps per process count.
    threads : int
        Intra-op threads per process (keep ``2 × threads`` ≤ the cores).
    sizes_bytes : sequence of int
        All-reduce message sizes of the link measurement.
    repeats : int
        Timed all-reduces per size, and timed forward/backward passes.
    random_state : int
        Seed of the weights and the batch.

    Returns
    -------
    DataFrame
        One row, :data:`OVERLAP_COLUMNS`: the measured link (``link_bandwidth_gb_per_s``,
        ``link_latency_s``), ``grad_bytes`` (FP32 gradients), ``forward_s``/``backward_s`` (one process, medians),
        the median DDP step on 1 and 2 processes and their difference ``measured_increase_s``, the predicted exposed
        all-reduce with and without overlap, and ``supports`` (:func:`overlap_verdict`). ``attrs["allreduce"]``: the
        link measurement's rows; ``attrs["ddp"]``: the DDP harness's rows (lists of records).

    Raises
    ------
    ValueError, TypeError
        Bad arguments (a module instead of a zoo id, non-positive counts, too few message sizes).
    """
    import torch

    from perfmodel.measure import measure_cluster_speed
    from perfmodel.measure.timing import check_input_shape, environment

    if not isinstance(model, str):
        raise TypeError(f"check_ddp_overlap needs a zoo id (each worker process builds the model); got {type(model).__name__}.")
    for what, v, low in (("batch_size", batch_size, 1), ("steps", steps, 1), ("warmup", warmup, 0), ("threads", threads, 1),
                         ("repeats", repeats, 1)):
        _check_count(what, v, low)
    _check_sizes(sizes_bytes)
    input_shape = check_input_shape(model, input_shape)
    ar = measure_allreduce(sizes_bytes, world_size=2, repeats=repeats, warmup=warmup, threads=threads)
    link = fit_link(ar)
    fwd, bwd, n_params = _time_passes(model, input_shape, batch_size, threads, repeats, random_state)
    ddp = measure_cluster_speed(model, input_shape, world_sizes=(1, 2), batch_size=batch_size, steps=steps, warmup=warmup,
                                backend="gloo", threads=threads, random_state=random_state)
    timed = ddp[~ddp["warmup"].astype(bool)]
    med = timed.groupby("n_workers")["step_time_s"].median()
    grad_bytes = 4.0 * n_params
    pred = predict_ddp_overlap(bwd, grad_bytes, link, n=2)
    inc = float(med[2] - med[1])
    env = environment("cpu")
    row = dict(model=str(ddp["model"].iloc[0]), batch_size=int(batch_size), threads=int(threads), steps=int(steps), param_count=n_params,
               grad_bytes=grad_bytes, n_buckets=pred["n_buckets"], forward_s=fwd, backward_s=bwd,
               link_bandwidth_gb_per_s=link.bandwidth_gb_per_s, link_latency_s=link.latency_s, measured_step_1_s=float(med[1]),
               measured_step_2_s=float(med[2]), measured_increase_s=inc, predicted_overlap_s=pred["predicted_overlap_s"],
               predicted_no_overlap_s=pred["predicted_no_overlap_s"], predicted_comm_total_s=pred["predicted_comm_total_s"],
               supports=overlap_verdict(inc, pred["predicted_overlap_s"], pred["predicted_no_overlap_s"]),
               torch_version=torch.__version__, cpu=env["cpu"], timestamp_utc=env["timestamp_utc"])
    out = pd.DataFrame([row], columns=OVERLAP_COLUMNS)
    out.attrs["allreduce"] = ar.to_dict("records")  # records: a frame in attrs breaks printing and concatenation
    out.attrs["ddp"] = ddp.to_dict("records")
    return out


def main(argv=None) -> int:
    """``python -m perfmodel.diagnostics.ddp_overlap --out FILE``: run :func:`check_ddp_overlap`, append its row to
    ``FILE`` (:func:`perfmodel.measure.append_rows`) and its provenance to the README.md next to it."""
    from perfmodel.measure.store import append_rows
    from perfmodel.measure.timing import _cpu_name

    ap = argparse.ArgumentParser(prog="python -m perfmodel.diagnostics.ddp_overlap", description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="shake-shake-80")
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", required=True, help="CSV file the row is appended to (atomically); provenance goes to README.md beside it")
    a = ap.parse_args(argv)
    import torch

    t0 = time.perf_counter()
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    res = check_ddp_overlap(a.model, batch_size=a.batch_size, steps=a.steps, warmup=a.warmup, repeats=a.repeats)
    wall = time.perf_counter() - t0
    load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    out = Path(a.out)
    append_rows(res, out)
    r = res.iloc[0]
    cmd = " ".join(["python -m perfmodel.diagnostics.ddp_overlap", *(argv if argv is not None else sys.argv[1:])])
    entry = (f"\n* {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC — `{cmd}` → `{out.name}`: DDP overlap check "
             f"({r['model']}, batch {r['batch_size']} per process, gloo, 1 vs 2 processes of {r['threads']} thread). Measured "
             f"link {r['link_bandwidth_gb_per_s']:.3g} GB/s, {r['link_latency_s'] * 1e6:.3g} us; step {r['measured_step_1_s'] * 1e3:.1f} → "
             f"{r['measured_step_2_s'] * 1e3:.1f} ms (+{r['measured_increase_s'] * 1e3:.1f} ms); predicted exposed all-reduce "
             f"{r['predicted_overlap_s'] * 1e3:.2f} ms with overlap, {r['predicted_no_overlap_s'] * 1e3:.2f} ms without: supports "
             f"'{r['supports']}'. {wall / 60:.1f} min wall. CPU: {_cpu_name()}, {os.cpu_count()} logical cores; torch "
             f"{torch.__version__}, Python {platform.python_version()}; load average {load0:.2f} at start, {load1:.2f} at the end.\n")
    readme = out.parent / "README.md"
    if not readme.exists():
        readme.write_text("# perfmodel's own measurements\n\nProvenance of each campaign:\n")
    with open(readme, "a") as f:
        f.write(entry)
    print(entry.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
