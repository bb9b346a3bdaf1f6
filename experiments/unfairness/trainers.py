"""The classifiers of plot_0 and exp8: diffprivlib's DP random forest, a (DP-SGD) ReLU network, and
scikit-learn's forest as the non-private reference. Each takes features in [0, 1] (public bounds),
integer labels 0 … classes − 1 and a seed, and returns its ``predict``.

DP-SGD (Abadi et al. 2016) through Opacus: per-example gradients clipped to norm ``clip``, Gaussian
noise calibrated by Opacus's RDP accountant to (ε, δ) over ``epochs`` epochs of Poisson-sampled batches.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

#: The paper's privacy parameters for plot_0 and exp8 (main.py: ε = 10; DP-SGD δ = 1e-5).
EPSILON, DELTA = 10.0, 1e-5


#: Opacus's default accountant (PRV), as the paper's ``PrivacyEngine()``.
ACCOUNTANT = "prv"


@cache
def noise_multiplier(epsilon: float, delta: float, sample_rate: float, epochs: int) -> float:
    """The noise multiplier Opacus's ``make_private_with_epsilon`` computes for (ε, δ), the sampling rate
    1/len(loader) and ``epochs`` — cached: the PRV accountant's search takes ≈ 15 s, the same for every
    model trained on the same number of rows."""
    from opacus.accountants.utils import get_noise_multiplier

    return float(get_noise_multiplier(target_epsilon=epsilon, target_delta=delta, sample_rate=sample_rate,
                                      epochs=epochs, accountant=ACCOUNTANT))


def dp_forest(x: np.ndarray, y: np.ndarray, classes: int, seed: int, *, epsilon: float = EPSILON, trees: int = 20,
              depth: int = 8) -> Any:
    """diffprivlib's DP random forest on features in [0, 1] (public bounds)."""
    from dpaudit.mia.claim.learners import diffprivlib_models  # importable with scikit-learn 1.9

    model = diffprivlib_models().RandomForestClassifier(
        n_estimators=trees, epsilon=epsilon, max_depth=depth, bounds=(np.zeros(x.shape[1]), np.ones(x.shape[1])),
        classes=list(range(classes)), random_state=seed)
    model.fit(x, y)
    return model.predict


def forest(x: np.ndarray, y: np.ndarray, classes: int, seed: int, *, trees: int = 50, depth: int = 8) -> Any:
    """The non-private reference: scikit-learn's random forest on the same features."""
    from sklearn.ensemble import RandomForestClassifier

    model = RandomForestClassifier(n_estimators=trees, max_depth=depth, n_jobs=1, random_state=seed)
    model.fit(x, y)
    return model.predict


def dp_network(x: np.ndarray, y: np.ndarray, classes: int, seed: int, *, hidden: tuple[int, ...] = (32,),
               epochs: int = 5, batch: int = 256, lr: float = 0.5, momentum: float = 0.0,
               epsilon: float | None = EPSILON, delta: float = DELTA, clip: float = 1.0) -> Any:
    """A ReLU network (``hidden`` layer widths) trained by SGD, with Opacus DP-SGD at (ε, δ) and
    clipping norm ``clip`` unless ``epsilon`` is None (then non-private). Returns its predict."""
    import warnings

    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    widths = (x.shape[1], *hidden)
    layers: list[Any] = []
    for d_in, d_out in zip(widths, widths[1:]):
        layers += [torch.nn.Linear(d_in, d_out), torch.nn.ReLU()]
    net = torch.nn.Sequential(*layers, torch.nn.Linear(widths[-1], classes))
    data = torch.utils.data.TensorDataset(torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.long))
    loader = torch.utils.data.DataLoader(data, batch_size=min(batch, len(x)), shuffle=True,
                                         generator=torch.Generator().manual_seed(seed))
    optimizer = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum)
    with warnings.catch_warnings():  # Opacus warns about its secure-RNG default and the accountant's sampling
        warnings.simplefilter("ignore")
        if epsilon is not None:
            from opacus import PrivacyEngine

            net, optimizer, loader = PrivacyEngine(accountant=ACCOUNTANT).make_private(
                module=net, optimizer=optimizer, data_loader=loader, max_grad_norm=clip,
                noise_multiplier=noise_multiplier(epsilon, delta, 1 / len(loader), epochs))
        loss = torch.nn.CrossEntropyLoss()
        for _ in range(epochs):
            for xb, yb in loader:
                if len(xb) == 0:
                    continue
                optimizer.zero_grad()
                loss(net(xb), yb).backward()
                optimizer.step()

    def predict(features: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return net(torch.tensor(features, dtype=torch.float32)).argmax(dim=1).numpy()

    return predict
