"""DP-SGD on CPU with jax-privacy: logistic regression or a one-hidden-layer network at a claimed (ε, δ).

DP-SGD (Abadi et al., *Deep Learning with Differential Privacy*, CCS 2016, Alg. 1), as jax-privacy runs it:

1. Poisson sampling: at each of T steps every record is in the batch independently with probability
   q = B/n (B the expected batch size; jax-privacy's ``CyclicPoissonSampling``, a Binomial(n, q) size
   then a uniform subset of that size — the same distribution).
2. Per-example clipping: each record's gradient g_i is scaled to norm ≤ C, ḡ_i = g_i·min(1, C/‖g_i‖)
   (jax-privacy's ``clipped_grad``), and the clipped gradients are summed.
3. Gaussian noise: the sum gets N(0, σ²C²·I) added, is divided by B, and a plain SGD step is taken.

The mechanism is the T-fold composition of the Poisson-subsampled Gaussian mechanism with noise multiplier
σ under add/remove-one adjacency. σ is calibrated to (ε, δ) by jax-privacy's
``accounting.calibrate_noise_multiplier`` with its DP-SGD accountant (``DpsgdTrainingAccountant``) over
dp_accounting's RDP accountant (Mironov, Talwar & Zhang, *Rényi Differential Privacy of the Sampled
Gaussian Mechanism*, 2019): the smallest σ (to 0.01) whose RDP ε at δ is ≤ the claim. RDP's ε is an
upper bound, so the learner is at least as private as it claims.

Rows of X have L2 norm ≤ 1, so a logistic regression's per-example gradient (σ(z) − y)·(x, 1) has norm
< √2; the clipping norm C = :data:`CLIP_NORM` = 0.1 is well below that, so clipping binds on most
records and the broken learner without clipping really exceeds its claimed sensitivity (by up to 14×).

Deliberately broken variants (for validating an audit): ``noise_factor = ½`` adds noise σ/2·C while
claiming σ (``dp-sgd-half-noise``); ``clip=False`` skips clipping but adds the noise calibrated as if
it had clipped (``dp-sgd-no-clip``). ``private=False`` is the same SGD without clipping or noise.
Deterministic given ``random_state``: the batches come from numpy's ``default_rng(random_state)``, the
initial weights and the noise from ``jax.random.key(random_state)``. Float32, CPU.
"""

from __future__ import annotations

import functools
import logging
import math
import warnings
from typing import Any

import numpy as np

from dpaudit._errors import DataError

__all__ = ["DPSGDClassifier", "calibrate_noise_multiplier", "rdp_epsilon", "summed_gradient", "noisy_gradient",
           "CLIP_NORM", "BATCH_SIZE", "EPOCHS", "LEARNING_RATE", "HIDDEN", "jax_privacy_modules"]

#: Per-example clipping norm C.
CLIP_NORM = 0.1
#: Expected batch size B (sampling rate q = B/n).
BATCH_SIZE = 256
#: Passes over the data: T = ⌈EPOCHS/q⌉ steps.
EPOCHS = 5
#: SGD step on the noisy mean gradient (sum of clipped gradients plus noise, over B).
LEARNING_RATE = 20.0
#: Hidden units of the ``dp-sgd-mlp`` network.
HIDDEN = 32
#: Padded batches are a multiple of this wide (or n): the padding rows have weight 0.
PAD_MULTIPLE = 64


def jax_privacy_modules() -> tuple[Any, Any, Any]:
    """``(jax, jax.numpy, jax_privacy)``, or a DataError saying how to install the ``dpsgd`` extra."""
    try:
        import jax
        import jax.numpy as jnp
        import jax_privacy
    except ImportError as exc:
        raise DataError(f"the DP-SGD learners need jax-privacy, which is not installed ({exc}): "
                        'pip install "dpaudit[dpsgd]"') from None
    return jax, jnp, jax_privacy


@functools.lru_cache(maxsize=64)
def calibrate_noise_multiplier(epsilon: float, delta: float, *, n: int, batch_size: int, steps: int) -> float:
    """σ such that T = ``steps`` Poisson-subsampled (q = batch_size/n) Gaussian steps are (ε, δ)-DP.

    jax-privacy's ``calibrate_noise_multiplier`` with ``DpsgdTrainingAccountant(RdpAccountantConfig())``
    (add/remove-one adjacency); cached, as an audit trains many models on the same sizes.
    """
    _, _, jax_privacy = jax_privacy_modules()
    from jax_privacy import accounting

    if not (epsilon > 0 and math.isfinite(epsilon)) or not 0 < delta < 1:
        raise DataError(f"DP-SGD needs a finite ε > 0 and 0 < δ < 1, got ε = {epsilon!r}, δ = {delta!r}")
    accountant = accounting.DpsgdTrainingAccountant(accounting.RdpAccountantConfig())
    # dp_accounting logs through absl when an RDP order's series does not converge at large q; that order is
    # then left out, and ε over the remaining orders is still an upper bound. The log is muted here.
    absl = logging.getLogger("absl")
    level = absl.level
    absl.setLevel(logging.ERROR)
    try:
        return float(accounting.calibrate_noise_multiplier(
            target_epsilon=float(epsilon), accountant=accountant, batch_sizes=int(batch_size),
            num_updates=int(steps), num_samples=int(n), target_delta=float(delta)))
    finally:
        absl.setLevel(level)


def rdp_epsilon(noise_multiplier: float, sampling_rate: float, steps: int, delta: float) -> float:
    """ε at δ of T Poisson-subsampled Gaussian steps, straight from dp_accounting's RDP accountant."""
    import dp_accounting

    accountant = dp_accounting.rdp.RdpAccountant()
    event = dp_accounting.PoissonSampledDpEvent(sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier))
    accountant.compose(event, int(steps))
    return float(accountant.get_epsilon(delta))


def _logits(params: dict[str, Any], X: Any) -> Any:
    _, jnp, _ = jax_privacy_modules()
    if "W1" in params:
        X = jnp.maximum(X @ params["W1"] + params["b1"], 0.0)
    return X @ params["w"] + params["b"]


def _loss(params: dict[str, Any], X: Any, y: Any, weight: Any) -> Any:
    """Σ weight·(log(1 + e^z) − y·z): the logistic loss; weight 0 marks a padding row."""
    jax, _, _ = jax_privacy_modules()
    z = _logits(params, X)
    return (weight * (jax.nn.softplus(z) - y * z)).sum()


def summed_gradient(params: dict[str, Any], X: Any, y: Any, weight: Any, clip_norm: float) -> Any:
    """Σ_i ḡ_i, the per-example gradients clipped to ``clip_norm`` and summed (jax-privacy's ``clipped_grad``).

    ``clip_norm = inf`` sums the raw gradients (the broken learner without clipping).
    """
    _, _, _ = jax_privacy_modules()
    from jax_privacy.clipping import clipped_grad

    grad = clipped_grad(_loss, l2_clip_norm=clip_norm, batch_argnums=(1, 2, 3))
    with warnings.catch_warnings():  # jax-privacy 2.0 calls optax's deprecated global_norm (same value)
        warnings.filterwarnings("ignore", "optax.global_norm is deprecated", DeprecationWarning)
        return grad(params, X, y, weight)


def noisy_gradient(params: dict[str, Any], X: Any, y: Any, weight: Any, key: Any, clip_norm: float,
                   noise_std: float) -> Any:
    """:func:`summed_gradient` plus N(0, noise_std²) on every coordinate (noise_std = σ·C)."""
    jax, _, _ = jax_privacy_modules()
    total = summed_gradient(params, X, y, weight, clip_norm)
    leaves, tree = jax.tree.flatten(total)
    keys = jax.random.split(key, len(leaves))
    noisy = [g + noise_std * jax.random.normal(k, g.shape, g.dtype) for g, k in zip(leaves, keys)]
    return jax.tree.unflatten(tree, noisy)


def _init(key: Any, d: int, hidden: int) -> dict[str, Any]:
    jax, jnp, _ = jax_privacy_modules()
    if not hidden:
        return {"w": jnp.zeros(d, jnp.float32), "b": jnp.zeros((), jnp.float32)}
    k1, k2 = jax.random.split(key)
    return {"W1": jax.random.normal(k1, (d, hidden), jnp.float32) * np.float32(np.sqrt(2.0 / d)),
            "b1": jnp.zeros(hidden, jnp.float32),
            "w": jax.random.normal(k2, (hidden,), jnp.float32) * np.float32(np.sqrt(1.0 / hidden)),
            "b": jnp.zeros((), jnp.float32)}


@functools.lru_cache(maxsize=8)
def _trainer(clip_norm: float) -> Any:
    """The jitted training loop: a ``lax.scan`` of noisy-gradient SGD steps over padded Poisson batches.

    The step size (learning rate / expected batch size) is an argument, and the data come padded to a
    multiple of :data:`PAD_MULTIPLE` rows, so models trained on a few more or fewer records (an audit's
    canaries) reuse one compilation."""
    jax, _, _ = jax_privacy_modules()

    def train(params: Any, X: Any, y: Any, index: Any, weight: Any, keys: Any, noise_std: Any, step_size: Any) -> Any:
        def step(p: Any, batch: Any) -> Any:
            rows, w, key = batch
            g = noisy_gradient(p, X[rows], y[rows], w, key, clip_norm, noise_std)
            return jax.tree.map(lambda a, b: a - step_size * b, p, g), None

        return jax.lax.scan(step, params, (index, weight, keys))[0]

    return jax.jit(train)


class DPSGDClassifier:
    """Binary classifier trained by DP-SGD (module docstring) at the claimed (ε, δ); scikit-learn style.

    After ``fit``: ``noise_multiplier_`` (the calibrated σ the claim rests on), ``noise_std_`` (the noise
    actually added, σ·C·noise_factor, 0 when not private), ``sampling_rate_`` q, ``steps_`` T.
    """

    def __init__(self, epsilon: float, delta: float, random_state: int = 0, *, hidden: int = 0,
                 clip: bool = True, noise_factor: float = 1.0, private: bool = True, clip_norm: float = CLIP_NORM,
                 batch_size: int = BATCH_SIZE, epochs: float = EPOCHS, learning_rate: float = LEARNING_RATE) -> None:
        self.epsilon, self.delta, self.random_state = epsilon, delta, random_state
        self.hidden, self.clip, self.noise_factor, self.private = hidden, clip, noise_factor, private
        self.clip_norm, self.batch_size, self.epochs, self.learning_rate = clip_norm, batch_size, epochs, learning_rate
        self.classes_ = np.array([0, 1])

    def get_params(self, deep: bool = False) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("epsilon", "delta", "random_state", "hidden", "clip", "noise_factor",
                                              "private", "clip_norm", "batch_size", "epochs", "learning_rate")}

    def fit(self, X: Any, y: Any) -> DPSGDClassifier:
        jax, jnp, _ = jax_privacy_modules()
        from jax_privacy.batch_selection import CyclicPoissonSampling

        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y)
        if X.ndim != 2 or y.shape != (len(X),) or not np.isin(y, (0, 1)).all() or len(X) < 2:
            raise DataError(f"DP-SGD needs features (n ≥ 2, d) and 0/1 labels (n,), got {X.shape} and {y.shape}")
        n, d = X.shape
        batch = min(int(self.batch_size), n)
        q = batch / n
        steps = math.ceil(self.epochs / q)
        sigma = calibrate_noise_multiplier(self.epsilon, self.delta, n=n, batch_size=batch, steps=steps) \
            if self.private else 0.0
        rng = np.random.default_rng(self.random_state)
        batches = list(CyclicPoissonSampling(sampling_prob=q, iterations=steps).batch_iterator(n, rng))
        # every batch padded to one width (one compiled step), rounded up so other seeds reuse the compilation
        width = -(-max(1, max(len(b) for b in batches)) // PAD_MULTIPLE) * PAD_MULTIPLE
        rows = -(-max(n, width) // PAD_MULTIPLE) * PAD_MULTIPLE  # padding rows: never in a batch with weight > 0
        X_pad = np.zeros((rows, d), dtype=np.float32)
        X_pad[:n] = X
        y_pad = np.zeros(rows, dtype=np.float32)
        y_pad[:n] = y
        index = np.zeros((steps, width), dtype=np.int32)
        weight = np.zeros((steps, width), dtype=np.float32)
        for t, rows in enumerate(batches):
            index[t, :len(rows)] = rows
            weight[t, :len(rows)] = 1.0
        key_init, key_noise = jax.random.split(jax.random.key(self.random_state))
        clip_norm = float(self.clip_norm) if (self.private and self.clip) else math.inf
        noise_std = float(self.noise_factor) * sigma * float(self.clip_norm) if self.private else 0.0
        train = _trainer(clip_norm)
        params = train(_init(key_init, d, int(self.hidden)), jnp.asarray(X_pad), jnp.asarray(y_pad),
                       jnp.asarray(index), jnp.asarray(weight), jax.random.split(key_noise, steps),
                       jnp.float32(noise_std), jnp.float32(float(self.learning_rate) / batch))
        self.params_ = jax.tree.map(np.asarray, params)
        self.noise_multiplier_, self.noise_std_, self.sampling_rate_, self.steps_ = sigma, noise_std, q, steps
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """The logit z of class 1 (float32 arithmetic, returned as float64)."""
        X = np.asarray(X, dtype=np.float32)
        p = self.params_
        if "W1" in p:
            X = np.maximum(X @ p["W1"] + p["b1"], 0.0)
        return np.asarray(X @ p["w"] + p["b"], dtype=np.float64)

    def predict_proba(self, X: Any) -> np.ndarray:
        z = self.decision_function(X)
        p1 = np.exp(-np.logaddexp(0.0, -z))
        return np.column_stack([np.exp(-np.logaddexp(0.0, z)), p1])

    def predict(self, X: Any) -> np.ndarray:
        return (self.decision_function(X) > 0).astype(np.int64)
