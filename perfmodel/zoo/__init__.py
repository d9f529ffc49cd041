"""perfmodel.zoo — the twenty CM-DARE CNNs as PyTorch modules, built by canonical id.

>>> from perfmodel import zoo
>>> net = zoo.build("resnet-32")          # any upstream spelling works too: zoo.build("Res32")

Architectures: :mod:`perfmodel.datasets.names` (derived by matching the data's parameter and tensor counts to tensor2tensor's code);
inputs are 32×32×3 CIFAR-10 images. Importing this package does not import torch; building a model does.
"""
from __future__ import annotations

from perfmodel.datasets.names import MODEL_IDS, model_info

__all__ = ["build", "list_models", "load_model", "CifarResNet", "CifarShakeShake", "INPUT_SHAPE"]

#: Input shape of every zoo CNN (channels, height, width), without the batch dimension.
INPUT_SHAPE = (3, 32, 32)


def __getattr__(name: str):
    if name == "CifarResNet":
        from perfmodel.zoo.resnet import CifarResNet

        return CifarResNet
    if name == "CifarShakeShake":
        from perfmodel.zoo.shake_shake import CifarShakeShake

        return CifarShakeShake
    raise AttributeError(f"module 'perfmodel.zoo' has no attribute {name!r}")


def list_models() -> tuple[str, ...]:
    """Canonical ids of the twenty CM-DARE CNNs."""
    return MODEL_IDS


def build(model_id: str, *, num_classes: int = 10, device=None, dtype=None):
    """Build a CM-DARE CNN by id (or any upstream spelling: ``"Shake Large"``, ``"Res15"`` …).

    Parameters
    ----------
    model_id : str
        Canonical id (:func:`list_models`) or an upstream spelling.
    num_classes : int, default 10
    device, dtype : optional
        Where and in which dtype to create the parameters (torch's factory keywords; ``device="meta"`` builds
        without allocating memory).

    Returns
    -------
    torch.nn.Module
        In training mode, freshly initialised.
    """
    from perfmodel.zoo.resnet import CifarResNet
    from perfmodel.zoo.shake_shake import CifarShakeShake

    info = model_info(model_id)  # raises UnknownNameError listing the valid ids
    if info.family == "resnet":
        return CifarResNet(info.layer_sizes, num_classes=num_classes, device=device, dtype=dtype)
    return CifarShakeShake(info.hidden_size, info.num_hidden_layers, num_classes=num_classes, device=device, dtype=dtype)


def load_model(target: str):
    """A model named on the command line: a zoo id (returned as its canonical id, so that predictors use the shipped
    features) or ``"package.module:ClassName"`` (imported, with the current folder importable, and instantiated without
    arguments).

    Raises
    ------
    perfmodel.datasets.UnknownNameError
        ``target`` has no ``:`` and is not a zoo id (the message suggests the closest ids).
    ValueError
        ``target`` is not a string, is malformed, cannot be imported, cannot be instantiated without arguments, or does
        not build a ``torch.nn.Module``.
    """
    import importlib
    import os
    import sys

    from perfmodel.datasets.names import canonical_model

    expected = f"Expected a zoo id ({', '.join(MODEL_IDS[:3])}, ...) or 'package.module:ClassName'"
    if not isinstance(target, str):
        raise ValueError(f"The target must be a string; got {type(target).__name__}. {expected}.")
    if ":" not in target:
        from perfmodel._errors import UnknownNameError

        try:
            return canonical_model(target)
        except UnknownNameError as exc:
            hub = (f" perfmodel does not download models: for the Hugging Face model {target!r}, pass the path of its "
                   "config.json (the file of that name on its Hub page, or AutoConfig.from_pretrained(...)"
                   ".save_pretrained(folder) where you have network)." if "/" in target else "")
            raise UnknownNameError(f"{exc}{hub} Besides the zoo ids, a model is a Hugging Face config.json path (GPT-2, "
                                   "Llama, BERT and any other transformers builds: examples/gpt2.json and "
                                   "examples/llama-3-8b.json in perfmodel's repository) or 'package.module:ClassName' "
                                   "of a torch module.") from None
    mod_name, _, cls_name = target.partition(":")
    if not mod_name or not all(p.isidentifier() for p in mod_name.split(".")) or not cls_name.isidentifier():
        raise ValueError(f"Malformed target {target!r}. {expected}, e.g. 'mynets:Net' for class Net in mynets.py of the "
                         "current folder.")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # as `python -m` does: a module of the current folder is importable
    try:
        cls = getattr(importlib.import_module(mod_name), cls_name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"Cannot import {target!r} ({type(exc).__name__}: {exc}). {expected} importable from the current "
                         f"folder ({cwd}) or the environment; install the package or fix the name.") from exc
    try:
        model = cls()
    except Exception as exc:
        raise ValueError(f"{target} could not be instantiated without arguments ({type(exc).__name__}: {exc}). Expected a class "
                         "whose arguments all have defaults; wrap it in one that does, or call the Python API with an "
                         "instance.") from exc
    import torch

    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"{target} built a {type(model).__name__}, not a torch.nn.Module. {expected}.")
    return model
