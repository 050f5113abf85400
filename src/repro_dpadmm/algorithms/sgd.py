"""Distributed DPSGD on a star network: baseline (5) of Huang et al. 2019 ("DPSGD in [20] for distributed settings").

[D] The paper gives "learning rate 0.1" ("we set the optimal learning rate to be 0.1", §VI-C) and
"sampling ratio 1" (full local batches, so no subsampling amplification). Every agent holds the global w^{k-1} and
sends its clipped mean gradient plus Gaussian noise, g-tilde_i = (1/m_i) sum_j clip_C(grad l(a_ij, b_ij, w^{k-1})) +
N(0, sigma^2 I), sigma = 2 C z / m_i (the Gaussian mechanism on a mean of clipped gradients under replace-one,
z = sqrt(2 ln(1.25/delta))/eps, C = c_1 = 1, a no-op clip when ||a|| <= 1). The aggregator then updates

* sum convention [D, default] (the gradient of objective (1), a sum of the n agents' means):
  w^k = w^{k-1} - lr sum_i (g-tilde_i + (lambda/n) R'(w^{k-1})),
* average convention [D-alt] (the gradient of the mean loss): w^k = w^{k-1} - lr [ (1/n) sum_i g-tilde_i +
  (lambda/n) R'(w^{k-1}) ].

The two are one family: the sum convention at lr equals the average convention at n lr, draw for draw. The paper
states a condition that picks one: lr 0.1 is *optimal*. It is (near-)optimal under the sum convention and 1.5-2
decades too small under the average one, where DPSGD does not leave the majority class in t = 100 iterations (the
learning-rate sweep of huang2019 Figs. 3 / 6, `experiments.huang2019_dpadmm.lr_sweep`); so the sum convention is the
default and the average convention a variant. Per-iteration privacy is (eps, delta) with the same noise multiplier
as DP-ADMM, so the totals (eps-bar) are the same under either convention.

API
---
``dpsgd(data, reg=, T=, rngs=, epsilon=, delta= | noise_multiplier= | sigma=, lr=0.1, convention='sum')``
returns a History with the traces of ``consensus`` ('el', 'err', 'err_global', 'aov'; every agent's model is w^k),
meta 'w' (R, d), 'sigma', 'noise_multiplier', and (a noisy, clipped run) the Spend of each agent's T releases of its
noisy gradient (multiplier sigma / ``sensitivity``, replace-one). Single steps for callers that add the noise themselves:
``local_gradients(data, w, clip)`` (the noiseless per-agent g_i, (R, n, d)), ``noiseless_step(data, w, ...)`` (the
noiseless aggregated gradient and the next w), ``update(w, g_tilde, ...)`` (the aggregator step), ``sigma(m, ...)``,
``sensitivity(m, clip)``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ..history import History
from ..kernels import consensus as kc
from ..privacy.bounds import huang2019 as hb
from ..privacy.mechanisms import check_epsilon_delta
from ..problems import regularizers
from ..rng import stacked_normal
from .consensus import StarData, _check_common, _Recorder, _history, _repeats

CONVENTIONS = ("sum", "average")


def sensitivity(m, clip: float = hb.C1):
    """2 C / m: the l2 sensitivity of a mean of m gradients clipped to C when one sample is replaced."""
    return 2.0 * clip / np.asarray(m, dtype=float)


def sigma(m, epsilon=None, delta=None, *, z=None, clip: float = hb.C1):
    """sigma = 2 C sqrt(2 ln(1.25/delta)) / (m eps) = 2 C z / m: Gaussian mechanism on a mean of m clipped gradients."""
    return hb._z(epsilon, delta, z) * 2.0 * clip / np.asarray(m, dtype=float)


def local_gradients(data: StarData, w: np.ndarray, clip: float | None = hb.C1, z: np.ndarray | None = None) -> np.ndarray:
    """g_i = (1/m) sum_j clip_C(grad l(a_ij, b_ij, w)) at the common model w (R, d): (R, n, d).

    The per-example gradient -b a sigma(-b w^T a) has norm sigma(-z)||a||, so clipping to C is a per-sample scale
    min(1, C / (sigma(-z) ||a||)) (Abadi et al. 2016); `clip=None` switches it off. `z`: margins at w if known.
    """
    if z is None:
        z = data.margins(np.broadcast_to(w[:, None, :], (w.shape[0], data.n, data.d)))
    R, n, m, d = z.shape[0], data.n, data.m, data.d
    ids = np.arange(data.check_repeats(R) * n)
    out = np.empty((ids.size, d))
    # one compiled sweep: expit(-z), the clipping scale (exactly 1.0 for clip = inf), -b s and the transposed
    # product, the arithmetic of the numpy expression (kernels.consensus.clipped_grad_sum_reference)
    kc.clipped_grad_sum(*data.kernel_args(), ids, data.b.reshape(-1, m), np.ascontiguousarray(z).reshape(ids.size, m),
                        data.row_norms.reshape(-1, m), np.inf if clip is None else float(clip), out)
    return out.reshape(R, n, d) / m


def update(w: np.ndarray, g_tilde: np.ndarray, *, lr: float, lam_n: float, reg: str,
           convention: str = "sum") -> np.ndarray:
    """The aggregator step from the agents' (noisy) gradients g_tilde (R, n, d): w^k (R, d) (docs/choices.md#huang-dpsgd)."""
    r = lam_n * regularizers.subgradient(reg, w)
    if convention == "average":
        return w - lr * (g_tilde.mean(axis=-2) + r)
    if convention == "sum":
        n = g_tilde.shape[-2]
        return w - lr * (g_tilde.sum(axis=-2) + n * r)
    raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")


def noiseless_step(data: StarData, w: np.ndarray, *, lr: float = 0.1, lam_n: float = 1e-6, reg: str = "l2",
                   convention: str = "sum", clip: float | None = hb.C1):
    """One DPSGD iteration without noise: (the per-agent gradients (R, n, d), the next w (R, d))."""
    g = local_gradients(data, w, clip)
    return g, update(w, g, lr=lr, lam_n=lam_n, reg=reg, convention=convention)


def dpsgd(data: StarData, *, reg: str, T: int, rngs: Sequence[np.random.Generator] | None = None,
          epsilon: float | None = None, delta: float | None = None, noise_multiplier: float | None = None,
          sigma_value: float | None = None, lr: float = 0.1, convention: str = "sum", lam_n: float = 1e-6,
          rho: float = 0.1, clip: float | None = hb.C1, record: bool = True, init=None, err_every: int = 1) -> History:
    """Distributed DPSGD (docs/choices.md#huang-dpsgd) for T iterations from w^0 = 0 [D]. Give (epsilon, delta), the noise multiplier
    z, or `sigma_value` directly (0 runs non-private gradient descent). `rho` only enters the AOV trace (the
    consensus penalty is 0: all agents hold w^k). A noisy run with a clipping bound records a Spend; without `clip`
    the sensitivity is unbounded and nothing is recorded."""
    regularizers.check(reg)
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    if not lr > 0:
        raise ValueError(f"the learning rate must be > 0, got {lr}")
    given = [epsilon is not None or delta is not None, noise_multiplier is not None, sigma_value is not None]
    if sum(given) != 1:
        raise ValueError("give exactly one of (epsilon, delta), noise_multiplier or sigma_value")
    z_noise = None
    if sigma_value is None:
        if epsilon is not None:
            check_epsilon_delta(epsilon, delta, max_epsilon=1.0)
        if clip is None:
            raise ValueError("a calibrated DPSGD needs a clipping bound (clip)")
        s = float(sigma(data.m, epsilon, delta, z=noise_multiplier, clip=clip))
        z_noise = hb._z(epsilon, delta, noise_multiplier)
    else:
        s = _given_sigma(sigma_value)
    R = _noisy_repeats(data, s, rngs)
    _check_common(data, T, rho, lam_n, R)
    n, d = data.n, data.d
    w = np.broadcast_to(np.asarray(0.0 if init is None else init, dtype=float), (R, d)).copy()
    rec = _Recorder(data, reg, lam_n, rho, record, T, err_every, shared=True)
    t0 = time.perf_counter()
    z = rec(np.broadcast_to(w[:, None, :], (R, n, d)), w, 0)
    for k in range(1, T + 1):
        g = local_gradients(data, w, clip, z)  # margins reused from the recorder
        if s > 0:
            g = g + stacked_normal(rngs, (n, d), s)
        w = update(w, g, lr=lr, lam_n=lam_n, reg=reg, convention=convention)
        z = rec(np.broadcast_to(w[:, None, :], (R, n, d)), w, k)
    meta = {"w": w, "w_tilde": np.broadcast_to(w[:, None, :], (R, n, d)).copy(), "T": T, "sigma": s,
            "noise_multiplier": z_noise, "epsilon": epsilon, "delta": delta, "lr": lr, "convention": convention}
    spends = []
    if s > 0 and clip is not None:  # z as calibrated (s = z sensitivity), or sigma_value over the sensitivity
        z_used = z_noise if z_noise is not None else s / float(sensitivity(data.m, clip))
        spends.append(hb.gaussian_spend(z_used, T, delta))
    return _history(rec, t0, meta, spends)


def dpsgd_lanes(data: StarData, *, reg: str, T: int, rngs: Sequence[np.random.Generator] | None, lrs,
                noise_multiplier: float | None = None, sigma_value: float | None = None, convention: str = "sum",
                lam_n: float = 1e-6, clip: float | None = hb.C1) -> np.ndarray:
    """``dpsgd`` for L learning rates at once, as lanes of one run from w^0 = 0: lrs (L,), one per lane. The lanes
    share the data (one sweep of each block row per iteration for all lanes: ``StarData.margins_lanes`` and
    ``kernels.consensus.clipped_grad_sum_lanes``) and the noise: iteration k draws each repeat's N(0, sigma^2 I)
    (n, d) once from its Generator and adds it to every lane's gradients, as a separate ``dpsgd`` run per lane with
    fresh Generators of the same seeds draws it. So lane l equals ``dpsgd(..., lr=lrs[l])``'s final w bit for bit
    (tests/algorithms/test_sgd.py). Give the noise multiplier z (sigma = 2 C z / m) or `sigma_value` (0: no noise).
    Returns w^T (L, R, d)."""
    regularizers.check(reg)
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")
    lrs = np.asarray(lrs, dtype=float)
    if lrs.ndim != 1 or lrs.size < 1 or not np.all(lrs > 0):
        raise ValueError(f"lrs must be a 1-D array of positive learning rates, got {lrs!r}")
    if (noise_multiplier is None) == (sigma_value is None):
        raise ValueError("give exactly one of noise_multiplier or sigma_value")
    if sigma_value is None:
        if clip is None:
            raise ValueError("a calibrated DPSGD needs a clipping bound (clip)")
        s = float(sigma(data.m, z=noise_multiplier, clip=clip))
    else:
        s = _given_sigma(sigma_value)
    R = _noisy_repeats(data, s, rngs)
    _check_common(data, T, 0.1, lam_n, R)
    L, n, m, d = lrs.size, data.n, data.m, data.d
    ids = np.arange(R * n)
    args = data.kernel_args()
    b, norms = data.b.reshape(-1, m), data.row_norms.reshape(-1, m)
    clip_v = np.inf if clip is None else float(clip)
    lr = lrs[:, None, None]   # one learning rate per lane, over (R, d)
    w = np.zeros((L, R, d))
    for _ in range(T):
        z = data.margins_lanes(np.broadcast_to(w[:, :, None, :], (L, R, n, d)))
        g = np.empty((L, ids.size, d))
        kc.clipped_grad_sum_lanes(*args, ids, b, z.reshape(L, ids.size, m), norms, clip_v, g)  # local_gradients
        g = g.reshape(L, R, n, d) / m
        if s > 0:
            g = g + stacked_normal(rngs, (n, d), s)[None]
        w = update(w, g, lr=lr, lam_n=lam_n, reg=reg, convention=convention)
    return w


def _given_sigma(sigma_value) -> float:
    s = float(sigma_value)
    if not np.isfinite(s) or s < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma_value}")
    return s


def _noisy_repeats(data, s: float, rngs) -> int:
    """The number of repeats of a run of noise scale `s`, once a noisy run is known to have its generators."""
    if s > 0 and rngs is None:
        raise ValueError("a noisy run needs `rngs`, one numpy Generator per repeat")
    return _repeats(data, rngs, None)
