"""SkyPilot adapter: rank resources by price x *predicted* time instead of SkyPilot's one-hour default.

SkyPilot's optimizer asks a task how long it runs on a candidate ``sky.Resources`` through the function passed to
``sky.Task.set_time_estimator`` (seconds; checked against skypilot 0.14.1). :func:`time_estimator` builds that function
from perfmodel: the resources' accelerator (``resources.accelerators``, a dict such as ``{"A100": 8}``; SkyPilot turns
``accelerators="A100:8"`` into it) gives the GPU type and count, :func:`perfmodel.predict_step_time` the step time, and
the estimate is ``steps × step time``. :func:`attach` sets it on a task and checks every candidate up front.

How the optimizer calls it (``sky/optimizer.py`` of skypilot 0.14.1): ``Optimizer._estimate_nodes_cost_or_time`` calls
``task.estimate_runtime(orig_resources)`` once per resources object the *user* gave (``accelerators`` as written, e.g.
``{"a100-80gb": 8}``, not canonicalised), and prices every launchable instance of it with that time
(``resources.get_cost(seconds) × task.num_nodes``); ``_compute_total_time`` / ``_compute_total_cost`` then call it on
the chosen launchable resources, whose ``accelerators`` SkyPilot infers from the instance type with its catalog's
names (``"A100-80GB"``, ``"H100-MEGA"``, ``"A10G"``, ``"L4"``, ``"T4"`` ...). Both spellings are mapped here to
perfmodel's GPU catalog with :func:`perfmodel.datasets.canonical_gpu` (plus :data:`SKYPILOT_GPU_ALIASES`); a GPU the
catalog lacks (AWS's ``M60``, ``K520`` ...) is an :class:`perfmodel.datasets.UnknownNameError` naming the
SkyPilot accelerator, fixed with ``gpu_map``.

:func:`task_yaml` / :func:`write_task_yaml` write a SkyPilot task file (``sky launch -c NAME task.yaml``) without
SkyPilot or a YAML library: ``perfmodel measure ops --sky`` uses them to run the operator microbenchmarks on a rented GPU.

skypilot is not a dependency of perfmodel (``pip install "perfmodel[skypilot]"`` adds it): nothing here imports it.
"""
from __future__ import annotations

import json
import os
import warnings

__all__ = ["time_estimator", "attach", "SKYPILOT_GPU_ALIASES", "task_yaml", "write_task_yaml"]

#: SkyPilot accelerator names that :func:`perfmodel.datasets.canonical_gpu` does not read, mapped to perfmodel's
#: catalog. ``H100-MEGA`` is GCP's a3-megagpu-8g: the same H100 SXM5 80 GB GPU as ``H100`` with more network
#: bandwidth between nodes (pass ``interconnect=`` for multi-node runs).
SKYPILOT_GPU_ALIASES = {"H100-MEGA": "H100"}


def _accelerator(resources) -> tuple[str, int]:
    acc = getattr(resources, "accelerators", None)
    if not acc:
        raise ValueError(f"SkyPilot resources {resources!r} have no accelerators (e.g. accelerators='A100:8'): perfmodel "
                         "predicts GPU step times only. Give every candidate sky.Resources an accelerator.")
    if isinstance(acc, str):  # sky.Resources stores a dict; a str is accepted for stand-ins
        name, _, count = acc.partition(":")
        acc = {name: float(count or 1)}
    if not isinstance(acc, dict):
        raise TypeError(f"SkyPilot resources {resources!r}: accelerators should be a dict such as {{'A100': 8}} (what "
                        f"sky.Resources.accelerators returns); got {type(acc).__name__} {acc!r}.")
    (name, count), *rest = acc.items()
    if rest:
        raise ValueError(f"SkyPilot resources with several accelerator types {dict(acc)}: perfmodel predicts one GPU type "
                         "per resources object. Give one sky.Resources per GPU type (task.set_resources({...})).")
    if "tpu" in str(name).lower():
        raise ValueError(f"SkyPilot accelerator {name!r} is a TPU: perfmodel predicts GPU step times only. Leave TPUs out "
                         "of the candidates, or give them no perfmodel estimator.")
    if isinstance(count, bool) or not isinstance(count, (int, float)) or count < 1 or float(count) != int(count):
        raise ValueError(f"SkyPilot accelerator count {count!r} for {name}: perfmodel predicts whole GPUs (1, 2, 4, 8 ...); "
                         f"a fractional count ({name}:0.5) shares one GPU with other jobs, which perfmodel does not model. "
                         f"Ask for {name}:1 or more.")
    return str(name), int(count)


def _gpu_for(name: str, gpu_map: dict):
    """perfmodel GPU (catalog id or GPUSpec) for a SkyPilot accelerator name."""
    from perfmodel._errors import UnknownNameError
    from perfmodel.datasets import GPUSpec, canonical_gpu

    mapped = {str(k).lower(): v for k, v in gpu_map.items()}
    target = mapped.get(name.lower())
    if target is None:
        target = {k.lower(): v for k, v in SKYPILOT_GPU_ALIASES.items()}.get(name.lower(), name)
    if isinstance(target, GPUSpec):
        return target
    try:
        return canonical_gpu(target)
    except UnknownNameError as err:
        raise UnknownNameError(
            f"SkyPilot accelerator {name!r} is not in perfmodel's GPU catalog, so perfmodel cannot predict its step "
            f"time. Map it with gpu_map={{{name!r}: <catalog id or perfmodel.datasets.GPUSpec>}} (e.g. a GPUSpec with "
            f"the card's spec sheet), or leave it out of the task's resources. perfmodel said: {err}") from None


def time_estimator(model, *, steps: int, batch_size: int, input_shape=None, strategy: str = "dp", precision: str = "bf16",
                   optimizer: str | None = "adam", num_nodes: int = 1, gpu_map: dict | None = None, **predict_kwargs):
    """A SkyPilot time estimator (``resources -> seconds``) for ``steps`` training steps of ``model``.

    Parameters
    ----------
    model
        As for :func:`perfmodel.predict_step_time`.
    steps : int
        Training steps.
    batch_size : int
        Global batch (over all nodes and GPUs).
    input_shape, strategy, precision, optimizer, **predict_kwargs
        Passed to :func:`perfmodel.predict_step_time` (with ``n_gpus`` the resources' accelerator count × ``num_nodes``;
        one GPU runs without a strategy).
    num_nodes : int
        The task's ``num_nodes`` (SkyPilot passes the estimator one node's resources). With more than one node the
        nodes are joined by ``interconnect=`` when given (e.g. ``{"intra": "nvlink", "inter": "infiniband-ndr"}``),
        else by the network of the resources' ``instance_type`` (``p5.48xlarge``: its 3,200 Gb/s of EFA as rails,
        :mod:`perfmodel.planning.networks`); resources with neither are refused with what to pass.
    gpu_map : dict, optional
        SkyPilot accelerator name -> perfmodel catalog id or :class:`perfmodel.datasets.GPUSpec`, for names perfmodel
        does not know (``{"A10G": my_a10g_spec}``); looked up before :data:`SKYPILOT_GPU_ALIASES` and
        :func:`perfmodel.datasets.canonical_gpu`. Case is ignored.

    Returns
    -------
    callable
        ``estimate(resources) -> float`` seconds, memoised per (GPU, count); pass it to
        ``sky.Task.set_time_estimator``. Raises ``ValueError`` for resources without exactly one GPU type, a TPU or a
        fractional GPU count, and :class:`perfmodel.datasets.UnknownNameError` (naming the SkyPilot accelerator) for a
        GPU perfmodel's catalog does not know.

    Examples
    --------
    >>> import sky                                                                      # doctest: +SKIP
    >>> task = sky.Task(run="python train.py")                                          # doctest: +SKIP
    >>> task.set_resources({sky.Resources(accelerators="A100:8"), sky.Resources(accelerators="H100:8")})  # doctest: +SKIP
    >>> task.set_time_estimator(time_estimator(cfg, steps=10_000, batch_size=32, input_shape=(1024,)))    # doctest: +SKIP
    """
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int; got {steps!r}.")
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes must be a positive int (the task's num_nodes); got {num_nodes!r}.")
    if gpu_map is not None and not isinstance(gpu_map, dict):
        raise TypeError(f"gpu_map must be a dict of SkyPilot accelerator name -> perfmodel GPU id or GPUSpec; got "
                        f"{type(gpu_map).__name__}.")
    gpu_map = dict(gpu_map or {})
    cache: dict = {}

    def estimate(resources) -> float:
        from perfmodel.step.step_time import predict_step_time

        name, per_node = _accelerator(resources)
        n = per_node * num_nodes
        inst = getattr(resources, "instance_type", None)
        key = (name.lower(), n, inst if num_nodes > 1 else None)
        if key not in cache:
            gpu = _gpu_for(name, gpu_map)
            kw = _node_links(predict_kwargs, num_nodes, per_node, inst)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                step = predict_step_time(model, gpu, input_shape=input_shape, batch_size=batch_size, n_gpus=n,
                                         strategy=strategy if n > 1 else "dp", precision=precision, optimizer=optimizer,
                                         **kw)
            cache[key] = float(step["step_time_s"].iloc[0]) * steps
        return cache[key]

    return estimate


def _node_links(predict_kwargs: dict, num_nodes: int, per_node: int, instance_type) -> dict:
    """The prediction's keywords for a task of ``num_nodes`` nodes: the caller's ``interconnect`` when given, else the
    resources' instance type's network (:func:`perfmodel.planning.networks.instance_network`, each node one instance
    of ``per_node`` GPUs), else a ValueError saying what to pass."""
    if num_nodes == 1 or predict_kwargs.get("interconnect") is not None:
        return predict_kwargs
    from perfmodel.planning.networks import instance_network

    net = instance_network(str(instance_type), per_node) if instance_type else None
    if net is None:
        known = (f"the resources' instance type {instance_type!r} has no known network "
                 "(perfmodel.datasets.load_instance_networks())" if instance_type else "the resources name no instance type")
        raise ValueError(f"num_nodes={num_nodes}: the GPUs of different nodes talk over the network, and {known}. Pass "
                         "interconnect= the network between the nodes, e.g. {'intra': 'nvlink', 'inter': "
                         "'infiniband-ndr'} or 'ethernet-100g' (perfmodel.step.parallel.INTERCONNECTS), or resources "
                         "with an instance type such as p5.48xlarge.")
    return dict(predict_kwargs, interconnect=net.links(), gpus_per_node=per_node, nics_per_node=net.nics_per_node)


def attach(task, model, *, steps: int, batch_size: int, check: bool = True, **kwargs):
    """Set a perfmodel :func:`time_estimator` on a SkyPilot task, for the task's ``num_nodes``.

    Parameters
    ----------
    task : sky.Task
        The task; its ``num_nodes`` and (with ``check``) its ``resources`` are read.
    model, steps, batch_size, **kwargs
        As for :func:`time_estimator` (``num_nodes`` is the task's).
    check : bool
        Estimate every candidate in ``task.resources`` now (memoised, so the optimizer reuses them), so that a GPU
        perfmodel cannot predict fails here rather than inside ``sky.launch``.

    Returns
    -------
    sky.Task
        ``task``, as ``sky.Task.set_time_estimator`` returns it.

    Examples
    --------
    >>> task = sky.Task(run="python train.py", num_nodes=1)                             # doctest: +SKIP
    >>> task.set_resources({sky.Resources(accelerators="A100:8"), sky.Resources(accelerators="H100:8")})  # doctest: +SKIP
    >>> attach(task, cfg, steps=10_000, batch_size=32, input_shape=(1024,))                               # doctest: +SKIP
    >>> sky.optimize(sky.Dag().add(task))                                                                 # doctest: +SKIP
    """
    if "num_nodes" in kwargs:
        raise TypeError("attach() takes num_nodes from task.num_nodes; set it on the task (sky.Task(num_nodes=...)).")
    if not callable(getattr(task, "set_time_estimator", None)):
        raise TypeError(f"attach() needs a sky.Task (with set_time_estimator); got {type(task).__name__}.")
    est = time_estimator(model, steps=steps, batch_size=batch_size, num_nodes=int(getattr(task, "num_nodes", 1) or 1),
                         **kwargs)
    if check:
        for resources in getattr(task, "resources", None) or ():
            est(resources)
    return task.set_time_estimator(est)


def _block(text: str) -> str:
    """A YAML literal block scalar (``|``) holding ``text`` (lines indented by two spaces)."""
    return "|\n" + "".join(f"  {line}\n" if line else "\n" for line in str(text).strip("\n").split("\n"))


def task_yaml(*, name: str, run: str, setup: str | None = None, accelerators: str | None = None, envs: dict | None = None,
              file_mounts: dict | None = None, comment: str | None = None) -> str:
    """The text of a SkyPilot task YAML (the fields of ``sky launch`` task files: ``name``, ``resources``, ``envs``,
    ``file_mounts``, ``setup``, ``run``).

    Parameters
    ----------
    name : str
        The task's name.
    run, setup : str
        Shell commands (several lines allowed), written as literal blocks.
    accelerators : str, optional
        SkyPilot's accelerator spelling, e.g. ``"H100:1"``, ``"A100-80GB:8"``, ``"L4"``.
    envs : dict, optional
        Environment variables of the task.
    file_mounts : dict, optional
        Remote path -> local path or bucket URL (``s3://...``, ``gs://...``), or a dict of a SkyPilot storage
        (``{"name": ..., "mode": "MOUNT"}``).
    comment : str, optional
        Lines written as ``#`` comments at the top.

    Returns
    -------
    str
        YAML; every scalar is written as a JSON string (valid YAML), so no value is misread (``yes``, ``1e3``, ``:``).
    """
    def q(v) -> str:
        return json.dumps(str(v))

    out = [f"# {line}".rstrip() + "\n" for line in (comment or "").strip("\n").split("\n")] if comment else []
    out.append(f"name: {q(name)}\n")
    if accelerators:
        out.append(f"resources:\n  accelerators: {q(accelerators)}\n")
    if envs:
        out.append("envs:\n" + "".join(f"  {q(k)}: {q(v)}\n" for k, v in envs.items()))
    if file_mounts:
        out.append("file_mounts:\n")
        for k, v in file_mounts.items():
            if isinstance(v, dict):
                out.append(f"  {q(k)}:\n" + "".join(f"    {q(a)}: {q(b)}\n" for a, b in v.items()))
            else:
                out.append(f"  {q(k)}: {q(v)}\n")
    if setup:
        out.append(f"setup: {_block(setup)}")
    out.append(f"run: {_block(run)}")
    return "".join(out)


def write_task_yaml(path, **fields) -> str:
    """Write :func:`task_yaml` ``(**fields)`` to a new file ``path`` (never replacing one: ``FileExistsError``).

    Returns the path written, as a string.
    """
    text = task_yaml(**fields)
    path = os.fspath(path)
    try:
        with open(path, "x", encoding="utf-8") as f:
            f.write(text)
    except FileExistsError:
        raise FileExistsError(17, "File exists (perfmodel never overwrites a file: choose another path for the SkyPilot task "
                                  "YAML, or move this one away)", path) from None
    return path
