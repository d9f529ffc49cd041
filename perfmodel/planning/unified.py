"""One planner for every model and GPU: ``pm.plan(model, gpus, ...)`` answers from the world that can answer it.

perfmodel has two planners, built on two kinds of evidence:

* **CM-DARE's world** (:func:`perfmodel.planning.plan.plan_cmdare`): asynchronous training with parameter servers on
  K80/P100/V100 clusters, speeds from CM-DARE's measured regressions, transient lifetimes measured in 2019 and
  ICAC'19's prices. It is the planner of the papers' items; it takes the twenty zoo CNNs (or any module / features row
  it can place among them).
* **Today's clouds** (:func:`perfmodel.planning.cloud.plan_cloud`): synchronous data, tensor and pipeline parallelism on
  any GPU of the catalog, step times predicted from the GPU's spec sheet by the per-operator model, memory per GPU,
  dated cloud prices and spot-revocation traces.

:func:`plan` takes every model form (zoo id, ``torch.nn.Module``, Hugging Face config as a dict, a ``PretrainedConfig``
or a ``config.json`` path) and every GPU, chooses the world (``world="auto"``) from what was asked, and says which one
answered: the ``basis`` column and ``attrs["basis"]``. The rule, in order:

1. an argument only one planner knows (``max_workers``, ``ps``, ``transient``, ``staleness``,
   ``checkpoint_interval_steps`` → CM-DARE; ``n_gpus``, ``batch_sizes``, ``strategies``, ``spot``, ``precision``, … →
   today's clouds) chooses that planner; arguments of both is an error;
2. a Hugging Face config, or a GPU other than K80/P100/V100, → today's clouds;
3. otherwise (a CNN on CM-DARE's GPUs, or no GPUs named) → CM-DARE's measured world.

``world="cmdare"`` or ``world="cloud"`` forces one. A :class:`perfmodel.Workload` is routed by the fields it sets
(:data:`WORKLOAD_ARGS`; :func:`plan`): precision, optimizer or input dtype ask for today's clouds; shape and batch
alone leave the choice to the rule above.
"""
from __future__ import annotations

import inspect
from pathlib import Path

import pandas as pd

from perfmodel._workload import Workload, _merge

__all__ = ["plan", "WORLDS", "CMDARE_GPUS", "WORKLOAD_ARGS", "choose_world"]

#: The planners :func:`plan` chooses between.
WORLDS = ("cmdare", "cloud")

#: GPUs of CM-DARE's measurements (the papers' K80, P100, V100).
CMDARE_GPUS = ("K80", "P100", "V100")

BASIS = {
    "cmdare": ("CM-DARE (ICDCS'20) measured world: asynchronous parameter-server training on K80/P100/V100 clusters, speeds "
               "from CM-DARE's regressions, 2019 transient lifetimes and ICAC'19 prices (perfmodel.planning.plan_cmdare)"),
    "cloud": ("spec-sheet prediction for today's clouds: per-operator step-time model from the GPU's spec sheet, "
              "synchronous dp/fsdp/tp/pp, memory per GPU, dated cloud prices and spot traces (perfmodel.planning.plan_cloud)"),
}


def _params(fn) -> set[str]:
    return {p for p in inspect.signature(fn).parameters if p != "model"}


def _is_hf_config(model) -> bool:
    if isinstance(model, dict):
        return True
    if isinstance(model, (str, Path)) and str(model).endswith(".json"):
        return True
    return type(model).__name__.endswith("Config") and hasattr(model, "to_dict")


def choose_world(model, gpus=None, **kwargs) -> str:
    """The planner :func:`plan` would use for these arguments (``"cmdare"`` or ``"cloud"``); see the module docstring."""
    from perfmodel.datasets import canonical_gpu
    from perfmodel.planning.cloud import plan_cloud
    from perfmodel.planning.plan import plan_cmdare

    only_cmdare = sorted(set(kwargs) & (_params(plan_cmdare) - _params(plan_cloud)))
    only_cloud = sorted(set(kwargs) & (_params(plan_cloud) - _params(plan_cmdare)))
    unknown = sorted(set(kwargs) - _params(plan_cmdare) - _params(plan_cloud))
    if unknown:
        raise TypeError(f"plan() got argument(s) {unknown} that neither planner takes; CM-DARE's planner takes "
                        f"{sorted(_params(plan_cmdare))}, today's-cloud planner takes {sorted(_params(plan_cloud))}.")
    if only_cmdare and only_cloud:
        raise ValueError(f"plan() was given arguments of CM-DARE's measured world {only_cmdare} and of today's clouds "
                         f"{only_cloud}; they answer different questions (parameter-server clusters of 2019 vs synchronous "
                         "parallel training on today's GPUs). Keep one set, or pass world='cmdare' / world='cloud'.")
    if only_cmdare:
        return "cmdare"
    if only_cloud or _is_hf_config(model):
        return "cloud"
    if gpus is not None:
        from perfmodel.planning._inputs import gpu_names

        names = gpu_names(gpus, "plan")
        if any(canonical_gpu(g) not in CMDARE_GPUS for g in names):
            return "cloud"
    return "cmdare"


#: the :class:`perfmodel.Workload` fields each world's planner takes, as (its keyword, conversion): CM-DARE's world
#: plans FP32 asynchronous parameter-server training of one sample shape and one per-worker batch; today's clouds take
#: the step's precision, optimizer and input dtype too, and a list of global batches.
WORKLOAD_ARGS = {
    "cmdare": {"input_shape": ("input_shape", None), "batch_size": ("batch_size", None)},
    "cloud": {"input_shape": ("input_shape", None), "input_dtype": ("input_dtype", None), "precision": ("precision", None),
              "optimizer": ("optimizer", None), "batch_size": ("batch_sizes", lambda b: (b,))},
}


def _workload_world(workload: Workload, gpus, world: str, kwargs: dict) -> tuple[str, dict]:
    """The world a :class:`perfmodel.Workload` is planned in, and the planner's keywords with its fields filled in."""
    cloud_only = {k: v for k, v in workload.values().items() if k in set(WORKLOAD_ARGS["cloud"]) - set(WORKLOAD_ARGS["cmdare"])}
    if world == "auto":
        from perfmodel.planning.cloud import plan_cloud
        from perfmodel.planning.plan import plan_cmdare

        cmdare_args = sorted(set(kwargs) & (_params(plan_cmdare) - _params(plan_cloud)))
        if cloud_only and cmdare_args:
            raise ValueError(f"the Workload sets {sorted(cloud_only)} (today's clouds: precision, optimizer and input dtype "
                             f"of a synchronous step) and plan() was given {cmdare_args} (CM-DARE's measured world of "
                             "2019's asynchronous parameter-server clusters); they answer different questions. Leave "
                             f"{sorted(cloud_only)} unset in the Workload for CM-DARE's world, or drop {cmdare_args} for "
                             "today's clouds.")
        world = choose_world(workload.model, gpus, **kwargs, **cloud_only)
    hint = (", or plan it in today's clouds with world='cloud' (CM-DARE's world plans FP32 asynchronous training of the "
            "Workload's input_shape and batch_size only)") if world == "cmdare" else ""
    name = "plan(world='cmdare')" if world == "cmdare" else "plan"
    return world, _merge(name, workload, kwargs, WORKLOAD_ARGS[world], hint)


def plan(model, gpus=None, *, world: str = "auto", **kwargs) -> pd.DataFrame:
    """Candidate rentals for training ``model``: time, cost, revocations and the Pareto front, from the planner that
    can answer (see :mod:`perfmodel.planning.unified`).

    Parameters
    ----------
    model : str, torch.nn.Module, dict, transformers.PretrainedConfig, path to a config.json, or Workload
        A zoo id, a module, or a Hugging Face config; or a :class:`perfmodel.Workload`. Only the fields the workload
        sets are passed on (one left unset is the chosen planner's default: BF16 and Adam in today's clouds), under
        the chosen world's arguments (:data:`WORKLOAD_ARGS`): in today's clouds its input shape and dtype, precision,
        optimizer and batch (``batch_sizes=(batch_size,)``); in CM-DARE's world its input shape and batch (the
        samples of one asynchronous step, ``plan_cmdare``'s per-worker ``batch_size``). A workload that sets
        precision, optimizer or input dtype asks for today's clouds, and ``world="auto"`` chooses them; one that sets
        only its shape and batch is routed by the other arguments, as its model would be: ``pm.plan(pm.Workload(
        "resnet-32"), gpus="K80")`` plans in CM-DARE's world, as ``pm.plan("resnet-32", gpus="K80")`` does. With
        ``world="cmdare"``, a set field CM-DARE's world has no use for (precision, optimizer, ...) is a ``ValueError``
        naming it and ``world="cloud"``; a workload field the world would need together with an argument only
        CM-DARE's planner takes (``max_workers``, ``ps``, ...) is one too.
    gpus : str or sequence of str, optional
        GPU types (any catalog name or spelling); default: CM-DARE's K80/P100/V100 in its world, every priced GPU in
        today's.
    world : {"auto", "cmdare", "cloud"}
        Which planner answers; ``"auto"`` chooses from the arguments (:func:`choose_world`).
    **kwargs :
        The chosen planner's arguments (:func:`perfmodel.planning.plan.plan_cmdare`,
        :func:`perfmodel.planning.cloud.plan_cloud`).

    Returns
    -------
    DataFrame
        The chosen planner's rows, with a ``basis`` column and ``attrs["basis"]`` / ``attrs["world"]`` saying what the
        answer rests on.
    """
    from perfmodel.planning.cloud import plan_cloud
    from perfmodel.planning.plan import plan_cmdare

    if world not in ("auto", *WORLDS):
        raise ValueError(f"world must be one of ('auto', 'cmdare', 'cloud'); got {world!r}.")
    if isinstance(model, Workload):
        world, kwargs = _workload_world(model, gpus, world, kwargs)
        model = model.model
    if world == "auto":
        world = choose_world(model, gpus, **kwargs)
    if isinstance(model, (str, Path)) and str(model).endswith(".json"):
        from perfmodel.zoo.hf import read_config

        model = read_config(model)
    if world == "cmdare":
        if _is_hf_config(model):
            raise ValueError("CM-DARE's measured world plans the zoo CNNs (and modules like them) on parameter-server "
                             "clusters; a Hugging Face config cannot be placed there. Use world='cloud' (or 'auto').")
        bad = sorted(set(kwargs) - _params(plan_cmdare))
        if bad:
            raise TypeError(f"CM-DARE's planner does not take {bad}; it takes {sorted(_params(plan_cmdare))}.")
        out = plan_cmdare(model, **({} if gpus is None else {"gpus": gpus}), **kwargs)
    else:
        bad = sorted(set(kwargs) - _params(plan_cloud))
        if bad:
            raise TypeError(f"today's-cloud planner does not take {bad}; it takes {sorted(_params(plan_cloud))}.")
        out = plan_cloud(model, **({} if gpus is None else {"gpus": gpus}), **kwargs)
    out = out.copy()
    out["basis"] = world
    out.attrs["world"] = world
    out.attrs["basis"] = BASIS[world]
    return out
