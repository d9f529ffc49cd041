"""Gradient noise scale of a model on your data, measured on this machine (statistical efficiency, as Scavenger and
Pollux use it).

:func:`measure_gradient_noise` draws mini-batches of two sizes from your data (with replacement, so the estimators of
:func:`perfmodel.planning.gradient_noise_scale` are unbiased), computes the mini-batch gradient of the loss at the
model's current parameters, and records its squared norm ``|G_B|²``; no optimizer step is taken. From the mean
squared norms at the two sizes come ``|G|²``, ``tr(Σ)`` and ``B_simple = tr(Σ) / |G|²`` (McCandlish et al., 2018,
Appendix A), the batch size beyond which larger batches stop reducing the number of steps
(:func:`perfmodel.planning.steps_multiplier`).

The noise scale is a property of the data and of the training state: random inputs give a meaningless value, so the
data are required. Measure it at a few points of a real training run (it grows as the loss falls).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["measure_gradient_noise", "NOISE_COLUMNS"]

#: Columns of the rows :func:`measure_gradient_noise` returns (one per mini-batch gradient).
NOISE_COLUMNS = ["model", "batch_size", "draw", "grad_sq_norm", "loss", "n_examples", "random_state", "torch_version", "cpu", "timestamp_utc"]


def _check_data(data):
    import torch

    if isinstance(data, dict):
        data = (data.get("x"), data.get("y"))
    if not (isinstance(data, (tuple, list)) and len(data) == 2 and all(isinstance(t, torch.Tensor) for t in data)):
        raise TypeError("data must be (inputs, targets) tensors or a dict {'x': inputs, 'y': targets} (e.g. torch.load of a file "
                        f"saved with torch.save); got {type(data).__name__}. The noise scale depends on the data: random inputs "
                        "give a meaningless value.")
    x, y = data
    if x.shape[0] != y.shape[0] or x.shape[0] < 2:
        raise ValueError(f"inputs and targets must hold the same number (>= 2) of examples along dimension 0; got {x.shape[0]} and {y.shape[0]}.")
    return x, y


def measure_gradient_noise(model, data, *, batch_small: int = 8, batch_big: int = 64, draws: int = 20, loss_fn=None,
                           device: str = "cpu", random_state: int = 0, out=None, progress: bool = False) -> pd.DataFrame:
    """Squared norms of mini-batch gradients at two batch sizes, and the gradient noise scale from them.

    Parameters
    ----------
    model : str or torch.nn.Module
        A zoo id (built fresh, at its initialisation) or your module (at its current parameters; not modified).
    data : (Tensor, Tensor) or dict
        Inputs and targets, examples along dimension 0 (or ``{"x": ..., "y": ...}``).
    batch_small, batch_big : int
        The two batch sizes, ``0 < batch_small < batch_big``.
    draws : int
        Mini-batches drawn per size (the norms are averaged; the estimate's noise falls as ``1/sqrt(draws)``).
    loss_fn : callable, optional
        ``loss_fn(output, target)``, mean over the batch; default cross-entropy.
    device : str
        Where the gradients are computed.
    random_state : int
        Seed of the mini-batch draws.
    out : path, optional
        CSV the rows are appended to (atomically, under a lock; never overwritten).
    progress : bool
        A tqdm progress bar of the gradients on stderr.

    Returns
    -------
    DataFrame
        One row per gradient (:data:`NOISE_COLUMNS`); ``attrs["noise_scale"]`` holds ``b_simple``, ``grad_sq_norm``,
        ``trace_cov`` (:func:`perfmodel.planning.gradient_noise_scale`).
    """
    import torch

    from perfmodel.measure.timing import _resolve, check_device, environment
    from perfmodel.planning.efficiency import gradient_noise_scale

    for name, v in (("batch_small", batch_small), ("batch_big", batch_big), ("draws", draws)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int; got {v!r}.")
    if not batch_small < batch_big:
        raise ValueError(f"need batch_small < batch_big; got {batch_small} and {batch_big}.")
    device = check_device(device)
    x, y = _check_data(data)
    label, net = _resolve(model, device, x.dtype if x.is_floating_point() else torch.float32)
    loss_fn = torch.nn.functional.cross_entropy if loss_fn is None else loss_fn
    params = [p for p in net.parameters() if p.requires_grad]
    if not params:
        raise ValueError(f"{label} has no trainable parameters: there is no gradient to measure.")
    was_training = net.training
    net.train()
    g = torch.Generator().manual_seed(int(random_state))
    env = environment(device)
    rows = []
    import sys

    from tqdm.auto import tqdm

    bar = tqdm(total=2 * int(draws), desc=f"{label} noise", unit="grad", disable=not progress, file=sys.stderr)
    try:
        for b in (int(batch_small), int(batch_big)):
            for k in range(int(draws)):
                bar.update(1)
                idx = torch.randint(0, x.shape[0], (b,), generator=g)
                xb, yb = x[idx].to(device), y[idx].to(device)
                for p in params:
                    p.grad = None
                loss = loss_fn(net(xb), yb)
                if loss.dim() != 0:
                    raise ValueError(f"loss_fn must return the mean loss of the batch (a scalar); got shape {tuple(loss.shape)}.")
                loss.backward()
                sq = float(sum(float((p.grad.detach().double() ** 2).sum()) for p in params if p.grad is not None))
                rows.append(dict(model=label, batch_size=b, draw=k, grad_sq_norm=sq, loss=float(loss.detach()), n_examples=int(x.shape[0]),
                                 random_state=int(random_state), torch_version=env["torch_version"], cpu=env["cpu"],
                                 timestamp_utc=env["timestamp_utc"]))
    finally:
        bar.close()
        for p in params:
            p.grad = None
        net.train(was_training)
    df = pd.DataFrame(rows)[NOISE_COLUMNS]
    small = df.loc[df["batch_size"] == batch_small, "grad_sq_norm"]
    big = df.loc[df["batch_size"] == batch_big, "grad_sq_norm"]
    if out is not None:  # saved before the estimate, which refuses too-noisy norms: the measurements are kept either way
        from perfmodel.measure.store import append_rows

        append_rows(df, out)
    df.attrs["noise_scale"] = gradient_noise_scale(small, big, int(batch_small), int(batch_big))
    return df
