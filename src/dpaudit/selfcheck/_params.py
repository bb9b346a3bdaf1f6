"""The fixed parameters of the self-check: draws, the claimed ε and its split, the broken release, the test."""

from __future__ import annotations

from collections.abc import Mapping

#: Draws per database (each of D and D′) of the default run and of ``full=True``.
CI_DRAWS = 4_000
FULL_DRAWS = 100_000
MIN_DRAWS = 100
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
