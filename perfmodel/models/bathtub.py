"""The bathtub-shaped preemption model of Kadupitiya, Jadhao & Sharma (HPDC'20) for deadline-constrained transient
servers, as a lifelines parametric fitter.

Preemptible VMs that must die by a deadline ``b`` (24 h on GCE) are revoked often early (the first hours), rarely in
mid-life and again near the deadline. Kadupitiya et al. model the lifetime CDF as

    F(t) = A · (1 − exp(−t / τ₁) + exp((t − b) / τ₂)),   0 ≤ t < b,

with ``A`` the scale, ``τ₁`` the early-revocation time constant and ``τ₂`` the width of the rise before the deadline.
:class:`BathtubFitter` fits ``A``, ``τ₁``, ``τ₂`` (``b`` fixed, default 24 h) by maximum likelihood with lifelines, on
lifetimes right-censored at the deadline (a server still running at ``b`` is terminated, not revoked: its lifetime
is censored). The cumulative hazard is ``−log(1 − F(t))``; ``F(b⁻) < 1`` is required for servers to survive to
the deadline, which the parameter bounds keep (``A < 1/2``).
"""
from __future__ import annotations

import autograd.numpy as anp
from lifelines.fitters import ParametricUnivariateFitter

__all__ = ["BathtubFitter"]


class BathtubFitter(ParametricUnivariateFitter):
    """Kadupitiya–Jadhao–Sharma bathtub lifetime model (lifelines fitter; ``fit(durations, event_observed)``).

    Parameters
    ----------
    deadline_h : float, default 24
        The deadline ``b`` in hours (GCE preemptible VMs: 24).

    Attributes (after ``fit``)
    --------------------------
    A_, tau1_, tau2_ : float
        The fitted parameters (``tau*`` in hours), as lifelines' ``params_``.
    """

    _fitted_parameter_names = ["A_", "tau1_", "tau2_"]
    _bounds = [(1e-6, 0.5 - 1e-6), (1e-3, 1e3), (1e-3, 1e3)]

    def __init__(self, *args, deadline_h: float = 24.0, **kwargs):
        if not deadline_h > 0:
            raise ValueError(f"deadline_h must be a positive number of hours; got {deadline_h!r}.")
        self.deadline_h = float(deadline_h)
        super().__init__(*args, **kwargs)

    def fit(self, durations, event_observed=None, *args, **kwargs):
        """lifelines' ``fit``, after checking the data: lifetimes in hours, ≥ 0 and at most ``deadline_h`` (a VM is
        terminated there: clip longer records and mark them censored), at least two distinct lifetimes, and
        ``event_observed`` booleans (the strings ``"True"``/``"False"`` are read as such)."""
        import numpy as np

        from perfmodel.models._survival import as_flags

        t = np.asarray(durations, dtype=float).ravel()
        if t.size == 0 or not np.isfinite(t).all() or (t < 0).any():
            raise ValueError("BathtubFitter: durations must be a non-empty array of finite lifetimes ≥ 0 hours.")
        if (t > self.deadline_h + 1e-9).any():
            raise ValueError(f"BathtubFitter: {int((t > self.deadline_h + 1e-9).sum())} lifetime(s) above the deadline "
                             f"{self.deadline_h:g} h (max {t.max():.4g} h); the model's CDF is defined below it. Clip them to "
                             f"{self.deadline_h:g} h and mark them censored, or set deadline_h.")
        if np.unique(t).size < 2:
            raise ValueError(f"BathtubFitter: all {t.size} lifetime(s) equal {t[0]:.4g} h; its three parameters are not "
                             "identifiable from fewer than two distinct lifetimes.")
        if event_observed is not None:
            event_observed = as_flags(event_observed, name="event_observed")
        return super().fit(durations, event_observed, *args, **kwargs)

    def _create_initial_point(self, *args, **kwargs):
        return anp.array([0.3, 1.0, 1.0])

    def _cdf(self, params, times):
        A, tau1, tau2 = params
        return A * (1 - anp.exp(-times / tau1) + anp.exp((times - self.deadline_h) / tau2))

    def _cumulative_hazard(self, params, times):
        F = self._cdf(params, times)
        return -anp.log(anp.clip(1 - F, 1e-12, 1.0))
