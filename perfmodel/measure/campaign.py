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


def _done_keys(have) -> set:
    """Resume keys of the rows already in a step-time file (model ids canonicalised where known)."""
    from perfmodel.datasets import canonical_model

    if not len(have):
        return set()
    missing = [c for c in _KEY_COLUMNS if c not in have.columns]
    if missing:
        from perfmodel.measure.store import MeasurementFileError

        raise MeasurementFileError(f"the step-time file lacks the columns {missing} that identify a measured configuration; expected "
                                   f"a file of perfmodel.measure.STEP_COLUMNS. Write the campaign to a new file.")

    def canon(m):
        try:
            return canonical_model(m)
        except ValueError:
            return m

    k = have[_KEY_COLUMNS].astype(str)
    return set(zip(k["model"].map(canon), have["batch_size"].astype(int), have["threads"].astype(int), k["input_shape"], k["device"],
                   k["precision"]))


#: What identifies a measured configuration in a step-time file (the campaign's resume key).
_KEY_COLUMNS = ["model", "batch_size", "threads", "input_shape", "device", "precision"]


def measure_campaign(models, *, out, batch_sizes=(32, 128), threads=(1, 2), input_shape=(3, 32, 32), steps: int | None = None,
                     warmup: int = 1, max_steps: int = 20, budget_s: float | None = None, checkpoint_out=None,
                     checkpoint_repeats: int = 3, checkpoint_path=None, progress: bool = True, device: str = "cpu",
                     precision: str = "float32") -> dict:
    """Measure every (model, batch size, threads) combination not yet in ``out``; append each one's rows atomically.

    A combination counts as done when ``out`` has a row with the same canonical model id (any spelling of a zoo id is
    accepted: ``'Res15'`` and ``'resnet-15'`` are one model), batch size, threads, input shape, device and precision;
    everything else is measured.

    Parameters
    ----------
    models : iterable of str
        Zoo ids, in any upstream spelling; rows carry the canonical id.
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
        Also time checkpoints of each model (once per canonical model id) into this CSV.
    checkpoint_path : path, optional
        The checkpoint file (must not exist; see :func:`measure_checkpoint_time`). Default: a private temporary folder.
    device, precision : str
        As in :func:`measure_step_time`.

    Returns
    -------
    dict
        ``measured`` (combinations done now), ``skipped`` (already in the file), ``seconds``.
    """
    from tqdm.auto import tqdm

    from perfmodel.datasets import canonical_model
    from perfmodel.measure.store import check_appendable
    from perfmodel.measure.timing import STEP_COLUMNS, check_checkpoint_path, check_device, check_input_shape

    models = list(dict.fromkeys(canonical_model(m) for m in models))  # canonical ids, each once, in the given order
    device = check_device(device)
    shape = tuple(check_input_shape(models[0] if models else None, input_shape))
    for m in models[1:]:
        check_input_shape(m, shape)
    shape_key = "x".join(map(str, shape))
    check_appendable(out, STEP_COLUMNS)  # fail before measuring, not after
    if checkpoint_out is not None:
        from perfmodel.measure.timing import CHECKPOINT_COLUMNS

        check_appendable(checkpoint_out, CHECKPOINT_COLUMNS)
        if checkpoint_path is not None:
            check_checkpoint_path(checkpoint_path)
    combos = [(m, int(b), int(t)) for m in models for b in batch_sizes for t in threads]
    done = _done_keys(read_rows(out))
    todo = [c for c in combos if (*c, shape_key, device, precision) not in done]
    budget = 1800.0 if (budget_s is None and steps is None) else budget_s
    cost = _relative_costs(todo, shape) if steps is None else None
    t_start = time.perf_counter()
    measured = 0
    bar = tqdm(todo, desc="perfmodel measure", unit="combo", disable=not progress)
    for i, (m, b, t) in enumerate(bar):
        bar.set_postfix_str(f"{m} b={b} t={t}")
        if steps is None:
            left = max(budget - (time.perf_counter() - t_start), 0.0)
            share = left * cost[i] / sum(cost[i:])  # the remaining budget split in proportion to each combination's work
            rows = measure_step_time(m, shape, batch_size=b, steps=max_steps, warmup=warmup, threads=t, device=device,
                                     precision=precision, time_budget_s=max(share, 0.0))
        else:
            rows = measure_step_time(m, shape, batch_size=b, steps=steps, warmup=warmup, threads=t, device=device, precision=precision)
        append_rows(rows, out)
        measured += 1
    bar.close()
    if checkpoint_out is not None:
        ck = read_rows(checkpoint_out)
        ck_done = set()
        if len(ck):
            for m in ck["model"].astype(str):
                try:
                    ck_done.add(canonical_model(m))
                except ValueError:
                    ck_done.add(m)
        for m in tqdm([m for m in models if m not in ck_done], desc="checkpoints", unit="model", disable=not progress):
            append_rows(measure_checkpoint_time(m, checkpoint_path, repeats=checkpoint_repeats), checkpoint_out)
    return {"measured": measured, "skipped": len(combos) - len(todo), "seconds": time.perf_counter() - t_start}
