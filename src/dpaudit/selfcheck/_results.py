"""The self-check's results: one audited release (:class:`CheckResult`) and the whole run's report."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from dpaudit.selfcheck._params import BROKEN_FACTOR, REQUIRED_EXCESS


@dataclass(frozen=True)
class CheckResult:
    """One audited release on one pair.

    ``change`` is |v(D) − v(D′)| (for the names: the largest move of one cell's MD), ``ratio`` is
    ``change / sensitivity`` (for the joint split release: its exact loss over its claim);
    ``exact_loss`` is the largest privacy loss of the mechanism *as run* on this pair (Laplace:
    ``ε·change/sensitivity``; names: from the exact permute-and-flip probabilities), the most any test
    can show. A real release ``passed`` when ``epsilon_lb ≤ claimed_epsilon``; a broken one when it was
    caught (``epsilon_lb > claimed_epsilon``).
    """

    name: str
    release: str
    pair: str
    n: int
    claimed_epsilon: float
    sensitivity: float | None
    change: float | None
    ratio: float
    exact_loss: float
    draws: int
    test: str
    k_tp: int
    n_pos: int
    k_fp: int
    n_neg: int
    epsilon_lb: float
    point: float
    level: float
    broken: bool
    required: bool
    passed: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["point"] = None if math.isinf(self.point) else self.point
        return out


@dataclass(frozen=True)
class SelfcheckReport:
    """Every check, the broken releases, the split audit's accounting, and the verdict."""

    checks: tuple[CheckResult, ...]
    broken: tuple[CheckResult, ...]
    composition: Mapping[str, Any]
    draws: int
    level: float
    check_level: float
    full: bool
    seed: int
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def failures(self) -> list[str]:
        """The privacy failures: a real release whose bound beats its claim, or a split that does not compose."""
        out = [f"{c.name}: ε lower bound {c.epsilon_lb:.3f} exceeds the claimed ε = {c.claimed_epsilon:g}"
               for c in self.checks if not c.passed]
        if not self.composition["ok"]:
            out.append(f"budget split: {self.composition['problem']}")
        return out

    @property
    def inconclusive(self) -> list[str]:
        """The required broken releases not caught: the draws were too few to tell them from correct ones."""
        return [f"{c.name} (broken, noise for {BROKEN_FACTOR:g}× the sensitivity) was not caught: ε lower bound "
                f"{c.epsilon_lb:.3f} ≤ {c.claimed_epsilon:g}" for c in self.broken if c.required and not c.passed]

    @property
    def ok(self) -> bool:
        """No release was shown to beat its claim and the split composes (``failures`` is empty)."""
        return not self.failures

    @property
    def verdict(self) -> str:
        """``"fail"`` (a privacy failure), ``"inconclusive"`` (no failure, but a broken release escaped) or ``"pass"``."""
        return "fail" if self.failures else "inconclusive" if self.inconclusive else "pass"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "verdict": self.verdict,
            "failures": self.failures,
            "inconclusive": self.inconclusive,
            "draws_per_database": self.draws,
            "full": self.full,
            "level": self.level,
            "check_level": self.check_level,
            "seed": self.seed,
            "seconds": round(self.seconds, 2),
            "checks": [c.to_dict() for c in self.checks],
            "broken": [c.to_dict() for c in self.broken],
            "composition": dict(self.composition),
            "method": ("worst-case replace-one neighbours; real OpenDP releases drawn repeatedly; test chosen on "
                       "half of the draws, evaluated on the other half; Clopper-Pearson epsilon lower bound "
                       "(dpaudit.mia.metrics.epsilon_lower_bound_ci), Bonferroni over the required checks"),
            "notes": list(self.notes),
        }

    def __str__(self) -> str:
        half = self.draws // 2
        lines = [
            "dpaudit selfcheck: empirical ε lower bounds of every release on worst-case replace-one neighbours",
            f"{self.draws:,} real OpenDP draws per database ({half:,} choose the test, {self.draws - half:,} evaluate it); "
            f"Clopper–Pearson, all {len(self.checks)} bounds hold together with {self.level:.0%} confidence "
            f"(each at {self.check_level:.2%})",
            "",
        ]
        header = f"{'release':<20} {'claimed ε':>9} {'|Δv|/Δ':>7} {'exact loss':>10} {'ε lower bound':>13}  result"
        lines += [header, "-" * len(header)]
        for c in self.checks:
            lines.append(f"{c.name:<20} {c.claimed_epsilon:>9.3g} {c.ratio:>7.3f} {c.exact_loss:>10.3f} "
                         f"{c.epsilon_lb:>13.3f}  {'pass' if c.passed else 'FAIL'}")
        lines += ["", f"broken releases (noise for {BROKEN_FACTOR:g}× the claimed sensitivity): caught when the bound "
                  "exceeds the claim", header, "-" * len(header)]
        for c in self.broken:
            verdict = ("caught" if c.passed else "NOT CAUGHT" if c.required
                       else "not caught (exact loss ≤ claim: no violation)" if c.exact_loss <= c.claimed_epsilon
                       else f"not caught (not required: exact loss < {REQUIRED_EXCESS:g}× claim)")
            lines.append(f"{c.name:<20} {c.claimed_epsilon:>9.3g} {c.ratio:>7.3f} {c.exact_loss:>10.3f} "
                         f"{c.epsilon_lb:>13.3f}  {verdict}")
        comp = self.composition
        parts = " + ".join(f"{k} {v:g}" for k, v in comp["releases"].items())
        lines += ["", f"budget split {dict(comp['split'])}: ε = {comp['epsilon']:g} → {parts} = {comp['sum']:g} "
                  f"(ledger spent {comp['spent']:g}): {'ok' if comp['ok'] else 'WRONG'}"]
        lines += ["", "pairs:"] + [f"  {c.name}: {c.pair}" + (f" — {c.note}" if c.note else "") for c in self.checks]
        lines += [f"  {n}" for n in self.notes]
        lines += ["", f"{self.verdict.upper()} ({self.seconds:.1f} s)"]
        lines += [f"  {f}" for f in self.failures + self.inconclusive]
        if self.inconclusive and not self.failures:
            lines.append(f"  no release beat its claim, but {self.draws:,} draws were too few to catch every broken "
                         "release: run again with more draws (--draws N, or --full)")
        return "\n".join(lines)
