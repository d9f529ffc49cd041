"""Measurement campaigns: many (model, batch size, threads) combinations, appended to a dataset file as they finish,
resumable after an interruption (combinations already in the file are skipped), with a progress bar."""
from __future__ import annotations

import time

from perfmodel.measure.store import append_rows, read_rows
from perfmodel.measure.timing import measure_checkpoint_time, measure_step_time

__all__ = ["measure_campaign"]


def _relative_costs(combos, input_shape) -> list[float]:
    """Expected relative time of one step of each (model, batch, threads): FLOPs × batch / threads (zoo CNNs at
    CIFAR shape; 1 for anything else)."""
    from perfmodel.features import load_zoo_features

    z = load_zoo_features().set_index("model")["train_step_flops"]
    cifar = tuple(input_shape) == (3, 32, 32)
    return [float(z.get(m, 1.0)) * b / t if cifar and m in z.index else 1.0 for m, b, t in combos]


def measure_campaign(models, *, out, batch_sizes=(32, 128), threads=(1, 2), input_shape=(3, 32, 32), steps: int | None = None,
                     warmup: int = 1, max_steps: int = 20, budget_s: float | None = None, checkpoint_out=None,
                     checkpoint_repeats: int = 3, checkpoint_path=None, progress: bool = True, device: str = "cpu") -> dict:
    """Measure every (model, batch size, threads) combination not yet in ``out``; append each one's rows atomically.

    Parameters
    ----------
    models : iterable of str
        Zoo ids.
    out : path
        Step-time CSV (:data:`perfmodel.measure.STEP_COLUMNS`); created if missing.
    steps : int, optional
        Timed steps per combination. Default: as many as fit the combination's share of the remaining ``budget_s``
        (``time_budget_s`` of :func:`measure_step_time`), at least one and at most ``max_steps``, after ``warmup``.
        The remaining budget is shared in proportion to each combination's expected work (training-step FLOPs × batch,
        from the zoo's graph features, / threads), so that every combination gets about as many steps.
    budget_s : float, optional
        Wall-time budget of the whole campaign in seconds (default 1800 when ``steps`` is None).
    checkpoint_out : path, optional
        Also time checkpoints of each model (once per model) into this CSV.

    Returns
    -------
    dict
        ``measured`` (combinations done now), ``skipped`` (already in the file), ``seconds``.
    """
    from tqdm.auto import tqdm

    models = list(models)
    combos = [(m, int(b), int(t)) for m in models for b in batch_sizes for t in threads]
    have = read_rows(out)
    done = set()
    if len(have):
        done = set(zip(have["model"].astype(str), have["batch_size"].astype(int), have["threads"].astype(int)))
    todo = [c for c in combos if c not in done]
    budget = 1800.0 if (budget_s is None and steps is None) else budget_s
    cost = _relative_costs(todo, input_shape) if steps is None else None
    t_start = time.perf_counter()
    measured = 0
    bar = tqdm(todo, desc="perfmodel measure", unit="combo", disable=not progress)
    for i, (m, b, t) in enumerate(bar):
        bar.set_postfix_str(f"{m} b={b} t={t}")
        if steps is None:
            left = max(budget - (time.perf_counter() - t_start), 0.0)
            share = left * cost[i] / sum(cost[i:])  # the remaining budget split in proportion to each combination's work
            rows = measure_step_time(m, input_shape, batch_size=b, steps=max_steps, warmup=warmup, threads=t, device=device,
                                     time_budget_s=max(share, 0.0))
        else:
            rows = measure_step_time(m, input_shape, batch_size=b, steps=steps, warmup=warmup, threads=t, device=device)
        append_rows(rows, out)
        measured += 1
    bar.close()
    if checkpoint_out is not None:
        import os
        import tempfile

        ck = read_rows(checkpoint_out)
        ck_done = set(ck["model"].astype(str)) if len(ck) else set()
        for m in tqdm([m for m in models if m not in ck_done], desc="checkpoints", unit="model", disable=not progress):
            path = checkpoint_path or os.path.join(tempfile.gettempdir(), "perfmodel-checkpoint.pt")
            append_rows(measure_checkpoint_time(m, path, repeats=checkpoint_repeats), checkpoint_out)
    return {"measured": measured, "skipped": len(combos) - len(todo), "seconds": time.perf_counter() - t_start}
