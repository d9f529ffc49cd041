"""perfmodel.zoo — the twenty CM-DARE CNNs as PyTorch modules, built by canonical id.

>>> from perfmodel import zoo
>>> net = zoo.build("resnet-32")          # any upstream spelling works too: zoo.build("Res32")

Architectures: CATALOG.md §4 (derived by matching the data's parameter and tensor counts to tensor2tensor's code);
inputs are 32×32×3 CIFAR-10 images. Importing this package imports torch.
"""
from __future__ import annotations

from perfmodel.datasets.names import MODEL_IDS, model_info
from perfmodel.zoo.resnet import CifarResNet
from perfmodel.zoo.shake_shake import CifarShakeShake

__all__ = ["build", "list_models", "CifarResNet", "CifarShakeShake", "INPUT_SHAPE"]

#: Input shape of every zoo CNN (channels, height, width), without the batch dimension.
INPUT_SHAPE = (3, 32, 32)


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
    info = model_info(model_id)  # raises UnknownNameError listing the valid ids
    if info.family == "resnet":
        return CifarResNet(info.layer_sizes, num_classes=num_classes, device=device, dtype=dtype)
    return CifarShakeShake(info.hidden_size, info.num_hidden_layers, num_classes=num_classes, device=device, dtype=dtype)
