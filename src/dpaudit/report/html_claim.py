"""The HTML report of a DP-claim audit (:class:`~dpaudit.mia.claim.result.DPClaimAudit`): ``-o FILE.html``
and a notebook's ``_repr_html_``.

Sections: the verdict (the answer, first), the table of bounds, the non-private contrast, what was
audited (learner, claim, data, canaries, models, seed, versions) and how the bounds are made.
Every number is the JSON document's value printed by :func:`dpaudit.report._html.fmt`.
"""

from __future__ import annotations

from dpaudit._document import renders
from dpaudit.mia.claim.result import DPClaimAudit
from dpaudit.report._html import esc, fragment, key_values, note, page, section, table
from dpaudit.report.text_claim import BOUND_COLUMNS, FDP_NOTE, bound_rows, contrast_line

__all__ = ["render_claim_html", "render_claim_fragment", "claim_sections"]

_METHODS = ("One-run: Steinke, Nasr & Jagielski, NeurIPS 2023 (all M·m model–canary pairs, each model's scores "
            "centred on its median, guesses: the top r for r = 1, 2, 4, …). One-run f-DP: Mahloujifar et al., "
            "arXiv 2410.22235. Multi-run: Jagielski, Ullman & Oprea 2020 and Nasr et al. 2021 (Clopper–Pearson "
            "limits; canary and threshold chosen on half of the M models, bound on the other half). Each of the k "
            "bounds is at level 1 − (1 − level)/k, so the verdict holds at the stated level (union bound).")


def _headline(r: DPClaimAudit) -> tuple[str, str]:
    return "DP-claim audit", f"{r.learner} at ε = {r.claimed_epsilon:g}, δ = {r.delta:g} on {r.data}"


def claim_sections(r: DPClaimAudit) -> list[str]:
    """The page's sections, in reading order."""
    verdict = section("Verdict", note(r.headline(), "warn" if r.verdict.violated or r.blind else "ok"), anchor="verdict")
    rows = [(name, eps, conf, g, t, how) for name, eps, conf, g, t, how in bound_rows(r.bounds)]
    bounds = section("ε lower bounds", table(BOUND_COLUMNS, rows)
                     + (f"<p>{esc(FDP_NOTE)}</p>" if "one-run f-DP" in r.bounds else ""), anchor="bounds")
    contrast_rows = bound_rows(r.contrast_bounds) if r.contrast_bounds is not None else []
    contrast = section("Non-private contrast", f"<p>{esc(contrast_line(r))}</p>"
                       + (table(BOUND_COLUMNS, contrast_rows) if contrast_rows else ""), anchor="contrast")
    config = section("What was audited", key_values([
        ("learner", r.learner), ("description", r.learner_description), ("claims DP", r.private),
        ("claimed ε", r.claimed_epsilon), ("δ", r.delta), ("data", r.data), ("records", r.n_records), ("base set", r.base_rows),
        ("features", r.n_features), ("canaries", f"{r.m:,} {r.canaries}: {r.canary_description}"),
        ("models M", r.models), ("canaries included (model 0)", r.included[0]), ("level", r.level),
        ("seed", r.seed), *((k, v) for k, v in r.versions.items())]) + f"<p>{esc(_METHODS)}</p>", anchor="audited")
    return [verdict, bounds, contrast, config]


def _footer() -> str:
    from dpaudit._version import __version__

    return f"dpaudit {__version__} · every number is the --json document's value, printed to 4 significant digits"


@renders(DPClaimAudit)
def render_claim_html(result: DPClaimAudit) -> str:
    """The audit as one self-contained HTML page."""
    title, subtitle = _headline(result)
    return page(title, subtitle, claim_sections(result), footer=_footer())


@renders(DPClaimAudit)
def render_claim_fragment(result: DPClaimAudit) -> str:
    """The same sections as a fragment: what a notebook shows."""
    title, subtitle = _headline(result)
    return fragment(title, subtitle, claim_sections(result))
