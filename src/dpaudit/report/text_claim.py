"""The text report of a DP-claim audit (:class:`~dpaudit.mia.claim.result.DPClaimAudit`): ``str(result)``,
``dpaudit mia audit-dp``'s output and the text format (``-o FILE.txt``).

The answer first (the verdict line), then what was audited, the table of bounds (method, ε lower
bound, confidence, correct/guesses, threshold) and the non-private contrast.
"""

from __future__ import annotations

from dpaudit._document import renders
from dpaudit.mia.claim.result import DPClaimAudit
from dpaudit.mia.dp_audit import DPAuditBound

__all__ = ["render_claim", "bound_rows", "BOUND_COLUMNS", "contrast_line"]

#: The columns of the table of bounds (text and HTML).
BOUND_COLUMNS = ("method", "ε lower bound", "confidence", "correct/guesses", "threshold", "threshold choice")


def bound_rows(bounds: dict[str, DPAuditBound]) -> list[tuple[str, float, float, str, float, str]]:
    """One row per bound: method, ε, confidence, "correct/guesses", threshold, how the threshold was chosen."""
    return [(name, b.epsilon, b.confidence, f"{b.n_correct}/{b.n_guess}", b.threshold, b.strategy)
            for name, b in bounds.items()]


#: Why the f-DP bound is shown but not in the verdict (dpaudit.mia.claim.audit.NOT_IN_VERDICT).
FDP_NOTE = ("one-run f-DP: shown, not in the verdict — it tests a Gaussian-DP reading of the claim, which a "
            "correct non-Gaussian mechanism may exceed")


def contrast_line(result: DPClaimAudit) -> str:
    """"non-private (logreg): ε ≥ 6.2 (one-run), ε ≥ 5.9 (multi-run)", or why there is none."""
    if result.contrast_bounds is None:
        return "no non-private contrast (a user learner has none unless one is named; --no-contrast skips it)"
    parts = ", ".join(f"ε ≥ {b.epsilon:.3g} ({name})" for name, b in result.contrast_bounds.items())
    return f"non-private ({result.contrast_learner}): {parts}"


@renders(DPClaimAudit)
def render_claim(result: DPClaimAudit) -> str:
    """The audit as plain text (no trailing newline)."""
    r = result
    models = "1 model (one run)" if r.models == 1 else f"{r.models} models"
    lines = [r.headline(), "",
             f"dpaudit mia audit-dp — {r.learner}: {r.learner_description}",
             f"  claim: ε = {r.claimed_epsilon:g}, δ = {r.delta:g}"
             + ("" if r.private else "  (the learner is not private: audited as if it claimed this)"),
             f"  data: {r.data}, {r.n_records:,} records, {r.n_features} features (unit ball, declared schema)"
             + ("" if r.base_rows is None or r.base_rows == r.n_records else f"; base set {r.base_rows:,} records"),
             f"  canaries: {r.m:,} {r.canaries} ({r.canary_description}); each in with probability 1/2",
             f"  {models}, seed {r.seed}; canaries included: "
             + ", ".join(str(n) for n in r.included[:8]) + (", …" if len(r.included) > 8 else ""),
             ""]
    rows = bound_rows(r.bounds)
    widths = [max(len(BOUND_COLUMNS[0]), *(len(x[0]) for x in rows)), 13, 10, 15, 11]
    lines.append(f"  {BOUND_COLUMNS[0]:<{widths[0]}} {BOUND_COLUMNS[1]:>13} {BOUND_COLUMNS[2]:>10} "
                 f"{BOUND_COLUMNS[3]:>15} {BOUND_COLUMNS[4]:>11}  {BOUND_COLUMNS[5]}")
    for name, eps, conf, guesses, t, how in rows:
        lines.append(f"  {name:<{widths[0]}} {eps:>13.4g} {conf:>10.2%} {guesses:>15} {t:>11.4g}  {how}")
    if r.multi_run_canary is not None:
        chosen = f"of the {r.m:,} canaries, chosen on half of the models and bounded on the other half"
        lines.append(f"  multi-run: canary {r.multi_run_canary}, the most exposed {chosen}"
                     if r.bounds["multi-run"].epsilon > 0 else f"  multi-run: no evidence from the most exposed {chosen}")
    if "one-run f-DP" in r.bounds:
        lines.append(f"  {FDP_NOTE}")
    lines += ["", f"  {contrast_line(r)}",
              f"  verdict: {r.verdict.text}"]
    return "\n".join(lines)
