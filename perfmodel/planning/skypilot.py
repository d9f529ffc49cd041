"""SkyPilot adapter: rank resources by price x *predicted* time instead of SkyPilot's one-hour default.

SkyPilot's optimizer asks a task how long it runs on a candidate ``sky.Resources`` through the function passed to
``sky.Task.set_time_estimator`` (``Callable[[sky.Resources], float]``, seconds). :func:`time_estimator` builds that
function from perfmodel: the resources' accelerator (``resources.accelerators``, e.g. ``{"A100": 8}``) gives the GPU
type and count, :func:`perfmodel.predict_step_time` the step time, and the estimate is ``steps × step time``.

skypilot is not a dependency of perfmodel: nothing here imports it.
"""
from __future__ import annotations

import warnings

__all__ = ["time_estimator"]


def _accelerator(resources) -> tuple[str, int]:
    acc = getattr(resources, "accelerators", None)
    if not acc:
        raise ValueError(f"SkyPilot resources {resources!r} have no accelerators (e.g. accelerators='A100:8'): perfmodel "
                         "predicts GPU step times only.")
    if isinstance(acc, str):
        name, _, count = acc.partition(":")
        acc = {name: float(count or 1)}
    (name, count), *rest = acc.items()
    if rest:
        raise ValueError(f"SkyPilot resources with several accelerator types {dict(acc)}: give one.")
    if float(count) < 1 or float(count) != int(count):
        raise ValueError(f"SkyPilot accelerator count {count!r} for {name}: perfmodel predicts whole GPUs (1, 2, 4, 8 ...).")
    return str(name), int(count)


def time_estimator(model, *, steps: int, batch_size: int, input_shape=None, strategy: str = "dp", precision: str = "bf16",
                   optimizer: str | None = "adam", **predict_kwargs):
    """A SkyPilot time estimator (``resources -> seconds``) for ``steps`` training steps of ``model``.

    Parameters
    ----------
    model
        As for :func:`perfmodel.predict_step_time`.
    steps : int
        Training steps.
    batch_size : int
        Global batch.
    input_shape, strategy, precision, optimizer, **predict_kwargs
        Passed to :func:`perfmodel.predict_step_time` (with ``n_gpus`` the resources' accelerator count; one GPU runs
        without a strategy).

    Returns
    -------
    callable
        ``estimate(resources) -> float`` seconds, memoised per (GPU, count); pass it to
        ``sky.Task.set_time_estimator``. Raises ``ValueError`` for resources without exactly one GPU type and
        :class:`perfmodel.datasets.UnknownNameError` for a GPU perfmodel's catalog does not know.

    Examples
    --------
    >>> import sky                                                                      # doctest: +SKIP
    >>> task = sky.Task(run="python train.py")                                          # doctest: +SKIP
    >>> task.set_resources({sky.Resources(accelerators="A100:8"), sky.Resources(accelerators="H100:8")})  # doctest: +SKIP
    >>> task.set_time_estimator(time_estimator(cfg, steps=10_000, batch_size=32, input_shape=(1024,)))    # doctest: +SKIP
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int; got {steps!r}.")
    cache: dict = {}

    def estimate(resources) -> float:
        from perfmodel.datasets import canonical_gpu
        from perfmodel.models.op_step_time import predict_step_time

        name, n = _accelerator(resources)
        gpu = canonical_gpu(name)
        if (gpu, n) not in cache:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                step = predict_step_time(model, gpu, input_shape=input_shape, batch_size=batch_size, n_gpus=n,
                                         strategy=strategy if n > 1 else "dp", precision=precision, optimizer=optimizer,
                                         **predict_kwargs)
            cache[(gpu, n)] = float(step["step_time_s"].iloc[0]) * steps
        return cache[(gpu, n)]

    return estimate
