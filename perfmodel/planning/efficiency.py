"""Statistical efficiency: the gradient noise scale of McCandlish et al. ("An Empirical Model of Large-Batch
Training", 2018), as Pollux (OSDI'21) and Scavenger use it to reason about batch size.

The simple noise scale ``B_simple = tr(Σ) / |G|²`` (per-example gradient covariance over squared true gradient) sets
the batch size beyond which larger batches stop reducing the number of steps: with batch ``B`` the steps needed scale
as ``1 + B_simple / B``. It is estimated from squared gradient norms measured at two batch sizes (their Appendix A):

    |G|² ≈ (B_big |G_big|² − B_small |G_small|²) / (B_big − B_small)
    tr(Σ) ≈ (|G_small|² − |G_big|²) / (1/B_small − 1/B_big)

CM-DARE's and ICAC'19's data hold no gradient statistics, so the planner does not use this for the papers' models
(it plans a fixed number of steps); for your own measurements (gradient norms logged during training, e.g. with
``torch.nn.utils.clip_grad_norm_`` returning the total norm), :func:`gradient_noise_scale` gives ``B_simple`` and
:func:`steps_multiplier` the relative number of steps a batch size needs.
"""
from __future__ import annotations

import numpy as np

__all__ = ["gradient_noise_scale", "steps_multiplier"]


def gradient_noise_scale(sq_norm_small, sq_norm_big, batch_small: int, batch_big: int) -> dict:
    """``B_simple`` from squared gradient norms at two batch sizes (each an average over many steps, or arrays
    averaged here, as the estimators are unbiased only in expectation).

    Returns
    -------
    dict
        ``b_simple`` (samples), ``grad_sq_norm`` (|G|² estimate), ``trace_cov`` (tr Σ estimate).

    Raises
    ------
    ValueError
        Batch sizes not ordered or not positive, or estimates that are not positive (too few or too noisy
        measurements: average over more steps).
    """
    if not (0 < batch_small < batch_big):
        raise ValueError(f"need 0 < batch_small < batch_big; got {batch_small} and {batch_big}.")
    s = float(np.mean(sq_norm_small))
    b = float(np.mean(sq_norm_big))
    g2 = (batch_big * b - batch_small * s) / (batch_big - batch_small)
    tr = (s - b) / (1 / batch_small - 1 / batch_big)
    if not (g2 > 0 and tr > 0):
        raise ValueError(f"the estimates are not positive (|G|² = {g2:.4g}, tr Σ = {tr:.4g}): the squared norms must shrink with "
                         "the batch (|G_small|² > |G_big|²); average them over more steps.")
    return {"b_simple": tr / g2, "grad_sq_norm": g2, "trace_cov": tr}


def steps_multiplier(batch_size, b_simple: float):
    """Relative number of optimisation steps at ``batch_size`` compared with an infinitely large batch:
    ``1 + B_simple / B`` (McCandlish et al., eq. 2.11)."""
    bs = np.asarray(batch_size, dtype=float)
    if (bs <= 0).any() or not b_simple > 0:
        raise ValueError("batch_size and b_simple must be positive.")
    return 1 + b_simple / bs
