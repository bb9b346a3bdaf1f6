"""The fixed parameters of the self-check: draws, the claimed ε and its split, the broken release, the test."""

from __future__ import annotations

from collections.abc import Mapping

#: Draws per database (each of D and D′) of the default run and of ``full=True``.
CI_DRAWS = 4_000
FULL_DRAWS = 100_000
#: The fewest draws a run accepts: below it the deliberately broken releases are often not caught, so
#: the audit cannot tell a correct release from a broken one. Measured with the self-check's own
#: procedure (every required broken release, the run's Bonferroni level): a broken release escaped in
#: 19 of 20 runs at 500 draws, 5 of 20 at 1,000, 6 of 40 at 1,250, 4 of 100 at 1,500 and 1 of 320 at
#: 2,000 (none of 20 each at 3,000 and 4,000; docs/privacy.md). A run whose broken release still escapes
#: is reported as inconclusive, never as a privacy failure.
MIN_DRAWS = 2_000
#: The most draws a run accepts. Measured: about 190 bytes of memory per draw (the two databases'
#: outputs, their halves and the split audit's joint draws; 617 MB at 3 × 10⁶, 1.18 GB at 6 × 10⁶) and
#: about 3 ms of one core per draw (every OpenDP release is invoked once per draw), so 10⁷ draws take
#: ~2 GB, far inside a 24 GB machine, and ~8 hours — the time, not the memory, is the limit.
MAX_DRAWS = 10_000_000
#: Why the draws are bounded (the ``hint`` of the refusal).
DRAWS_HINT = (f" (fewer often miss the deliberately broken releases; more take hours at ~3 ms a draw; --full "
              f"runs {FULL_DRAWS:,})")
#: The ε each stand-alone release claims, and the total of the split audit.
EPSILON = 1.0
#: The split audit: two measures, most of ε on U_R, whose pair is tight.
SPLIT: Mapping[str, float] = {"tc": 0.2, "repair": 0.8}
#: The broken release adds noise for this fraction of the claimed sensitivity.
BROKEN_FACTOR = 0.5
#: A broken release must be caught when its exact privacy loss on the pair is at least this × the claim.
REQUIRED_EXCESS = 1.5
#: The test is the one with the largest Clopper–Pearson bound on the selection half at this stricter
#: level: it prefers thresholds backed by many draws over lucky far tails (simulated at 4,000 draws:
#: the broken U_MI^TVD release is then never missed in 2,000 runs, against 1.8 % at the check level).
#: It affects only which test is evaluated, never the validity of the bound.
SELECTION_LEVEL = 1.0 - 1e-8
