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

``world="cmdare"`` or ``world="cloud"`` forces one.
"""
from __future__ import annotations

import inspect
from pathlib import Path

import pandas as pd

from perfmodel._workload import accepts_workload

__all__ = ["plan", "WORLDS", "CMDARE_GPUS", "choose_world"]

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
        names = [gpus] if isinstance(gpus, str) else list(gpus)
        if any(canonical_gpu(g) not in CMDARE_GPUS for g in names):
            return "cloud"
    return "cmdare"


@accepts_workload("input_shape", "input_dtype", "precision", "optimizer", "batch_size",
                  rename={"batch_size": ("batch_sizes", lambda b: (b,))})
def plan(model, gpus=None, *, world: str = "auto", **kwargs) -> pd.DataFrame:
    """Candidate rentals for training ``model``: time, cost, revocations and the Pareto front, from the planner that
    can answer (see :mod:`perfmodel.planning.unified`).

    Parameters
    ----------
    model : str, torch.nn.Module, dict, transformers.PretrainedConfig, path to a config.json, or Workload
        A zoo id, a module, or a Hugging Face config; or a :class:`perfmodel.Workload`, whose input shape and dtype,
        precision, optimizer and batch (``batch_sizes=(batch_size,)``) are today's-cloud planner's arguments.
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
