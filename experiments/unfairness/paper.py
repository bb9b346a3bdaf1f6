"""The unfairness paper's own numbers, to set beside dpaudit's on the results page.

Transcribed from ``shared/papers/unfairness-reference-numbers.md``, which takes them from the authors'
public repository (``makarenko1/Measures-for-estimating-unfairness-in-data-under-DP``: its ``main.py``
catalogue, the CSV result files under ``plots/`` and values read off its committed plots, which
predate the published paper). ``APPROX`` marks a block whose values were read off a plot (≈).
``tests/test_experiment_unfairness_paper.py`` re-reads the reference file and checks every number
here against it, so a transcription error fails the suite.

Criteria are in the reference file's list order unless a block says "alphabetical" (the order of the
criterion labels, as the repository's plots of the chunked repair sort them).
"""

from __future__ import annotations

SOURCE = ("shared/papers/unfairness-reference-numbers.md — the authors' repository "
          "makarenko1/Measures-for-estimating-unfairness-in-data-under-DP")

#: The paper's criteria per dataset, list order (``main.py``). dpaudit's presets use the same criteria
#: for adult, compas, healthcare and census (IPUMS-CPS's names on dpaudit's synthetic generator);
#: dpaudit's stackoverflow is the 2018 survey with other columns (a proxy, :data:`common.ROLE`).
CRITERIA = {
    "adult": ("education-num ⊥ income", "sex ⊥ income", "race ⊥ income", "sex ⊥ income | hours-per-week"),
    "census": ("HEALTH ⊥ INCTOT | EDUC", "HEALTH ⊥ OCC | EDUC", "HEALTH ⊥ MARST | AGE", "HEALTH ⊥ INCTOT | AGE"),
    "stackoverflow": ("Country ⊥ RemoteWork | Employment", "Age ⊥ PurchaseInfluence | OrgSize",
                      "Country ⊥ MainBranch | YearsCodePro", "Age ⊥ MainBranch | EdLevel"),
    "compas": ("race ⊥ is_recid | age_cat", "sex ⊥ is_recid | priors_count", "race ⊥ decile_score | c_charge_degree",
               "sex ⊥ v_decile_score | age_cat"),
    "healthcare": ("race ⊥ complications | age_group", "smoker ⊥ complications | age_group", "race ⊥ income | county",
                   "smoker ⊥ income | num_children"),
}

#: plot_1 / plot_2: non-private values on the full data, list order, rounded to 3 decimals in the source.
NONPRIVATE = {
    "adult": {"mi_bits": (0.092, 0.037, 0.008, 0.023), "tvd": (0.030, 0.015, 0.002, 0.008),
              "tc": (0.244, 0.172, 0.054, 0.117)},
    "stackoverflow": {"mi_bits": (0.134, 0.018, 0.035, 0.076), "tvd": (0.072, 0.009, 0.005, 0.025),
                      "tc": (0.308, 0.131, 0.042, 0.182)},
    "compas": {"mi_bits": (0.011, 0.005, 0.091, 0.022), "tvd": (0.005, 0.002, 0.039, 0.006),
               "tc": (0.100, 0.052, 0.276, 0.108)},
}
#: Half a unit of the last printed digit: the most a correctly rounded value differs from the exact one.
NONPRIVATE_ROUNDING = 0.0005
#: plot_1's PrivBayes-style proxy on Adult (list order), raw and with the +0.5 offset.
PRIVBAYES_ADULT = (-0.441, -0.498, -0.485, -0.490)
PRIVBAYES_OFFSET_ADULT = (0.059, 0.002, 0.015, 0.010)

#: exp9, IPUMS-CPS, ε = 10, 100K rows, mean of 10 (``experiment9_census_measures.csv``).
IPUMS_USECASE = {
    "SEX ⊥ INCTOT": {"mi_bits": 0.03336, "tvd": 0.01622, "repair": 15_499.8, "tc": 0.18017},
    "RACE ⊥ INCTOT": {"mi_bits": 0.01062, "tvd": 0.00221, "repair": 7_219.3, "tc": 0.06455},
    "SEX ⊥ INCTOT | EDUC": {"mi_bits": 0.05846, "tvd": 0.02542, "repair": 20_422.7, "tc": 0.21884},
    "RACE ⊥ INCTOT | EDUC": {"mi_bits": 0.02110, "tvd": 0.00276, "repair": 10_192.0, "tc": 0.06082},
}
#: exp9, Adult (``experiment9_adult_summary.csv``); query disparity = gap of the SQL group-by rate.
ADULT_USECASE = {
    "sex ⊥ income": {"query_disparity": 0.08621, "mi_bits": 0.0367, "tvd": 0.01488, "repair": 4_573.8, "tc": 0.17454},
    "sex ⊥ income | education-num": {"query_disparity": 0.08022, "mi_bits": 0.03717, "tvd": 0.01493,
                                     "repair": 3_981.0, "tc": 0.16143},
    "race ⊥ income": {"query_disparity": 0.02701, "mi_bits": 0.00823, "tvd": 0.00147, "repair": 1_227.8, "tc": 0.05331},
    "race ⊥ income | education-num": {"query_disparity": 0.02049, "mi_bits": 0.00568, "tvd": 0.00088,
                                      "repair": 1_360.0, "tc": 0.03735},
}
#: exp9, COMPAS (``experiment9_compas_summary.csv``).
COMPAS_USECASE = {
    "race ⊥ decile_score | c_charge_degree": {"mi_bits": 0.09036, "tvd": 0.03918, "repair": 2_674.1, "tc": 0.27271},
    "c_charge_degree ⊥ decile_score | race": {"mi_bits": 0.0344, "tvd": 0.01459, "repair": 1_900.7, "tc": 0.14435},
    "race ⊥ decile_score | age_cat": {"mi_bits": 0.08531, "tvd": 0.0354, "repair": 2_557.6, "tc": 0.25703},
    "age_cat ⊥ decile_score | race": {"mi_bits": 0.15939, "tvd": 0.04921, "repair": 2_663.3, "tc": 0.32523},
}
#: exp9: Kendall τ of each measure against the query disparity.
USECASE_KENDALL = {"adult": {"mi_bits": 0.667, "tvd": 0.667, "repair": 0.667, "tc": 1.0},
                   "compas": {"mi_bits": 1.0, "tvd": 1.0, "repair": -1.0, "tc": 1.0}}
#: exp9: Adult's income rate overall and by sex (``experiment9_table.csv``): (rate, rows).
ADULT_RATES = {"all": (0.23929, 48_837), "Female": (0.10926, 16_190), "Male": (0.30376, 32_647)}

APPROX = {"PLOT0", "EXP1_RUNTIME", "EXP3_ERROR", "EXP5_TC", "EXP6_TC_ERROR", "CHUNKED_1K_CHUNKED", "FLIP_CHUNKED"}
#: plot_0 (Adult, ε = 10, 10K rows), list order, ≈.
PLOT0 = {"tvd": (0.03, 0.015, 0.002, 0.009), "repair": (2_400, 850, 310, 560), "tc": (0.23, 0.19, 0.06, 0.115),
         "dp_forest_gap": (0.12, 0.023, 0.013, 0.02), "dp_network_gap": (0.87, 0.20, 0.14, 0.15)}
#: exp1 (ε = 1, four criteria), ≈ seconds of the chunked U_R at (rows, seconds) points read off the plot.
EXP1_RUNTIME = {"adult": ((1_000, 50.0), (30_000, 1_750.0)), "census": ((5_000, 50.0), (100_000, 1_000.0)),
                "stackoverflow": ((5_000, 300.0), (20_000, 1_000.0)), "compas": ((1_000, 10.0), (10_000, 120.0)),
                "healthcare": ((100, 1.4), (1_000, 13.0))}
#: exp1, ≈ seconds of U_MI^TVD and U_TC (all datasets but IPUMS at 1M rows).
EXP1_FAST_SECONDS = {"tvd": (0.002, 0.05), "tc": (0.001, 0.01)}
#: exp3, ≈ relative error at (ε = 10, ε = 0.1) per measure and dataset.
EXP3_ERROR = {
    "tvd": {"adult": (0.004, 0.7), "census": (5e-4, 0.07), "stackoverflow": (1e-3, 0.1), "compas": (0.015, 1.3),
            "healthcare": (0.004, 0.3)},
    "tc": {"adult": (0.1, 5.0), "census": (0.3, 30.0), "stackoverflow": (0.02, 2.0), "compas": (0.2, 30.0),
           "healthcare": (0.5, 100.0)},
    "repair": {"adult": (0.15, 0.3), "stackoverflow": (0.5, 0.8), "compas": (0.1, 0.8), "healthcare": (0.006, 0.08)},
}
#: exp5, ≈ U_TC where it stops growing with k (healthcare: from 0.65 up to ≈ 1.4 at k = 1K).
EXP5_TC = {"adult": 0.587, "stackoverflow": 0.599, "compas": 0.523, "census": 0.65, "healthcare": (0.65, 1.4)}
#: exp6 (ε = 1, the paper's U_TC sensitivity), ≈ range of the relative error over k.
EXP6_TC_ERROR = {"adult": (10.0, 30.0), "stackoverflow": (10.0, 30.0), "compas": (10.0, 30.0),
                 "healthcare": (20.0, 60.0), "census": (60.0, 8e4)}
#: plot_3/4: U_R at 1K rows, ε = 1, alphabetical criterion order; unchunked (exact in the file) vs
#: chunks of 100 rows (≈, read off the plot). Stack Overflow's unchunked run timed out.
CHUNKED_1K_UNCHUNKED = {"adult": (230.05, 4.93, 3.64, 81.54), "census": (243.25, 250.68, 185.15, 403.05),
                        "compas": (104.45, 90.95, 8.23, -1.06), "healthcare": (163.40, 487.82, 53.92, 429.28)}
CHUNKED_1K_CHUNKED = {"adult": (243, 32, 72, 63), "census": (320, 318, 210, 380), "compas": (230, 107, 53, 48),
                      "healthcare": (320, 422, 220, 372), "stackoverflow": (155, 210, 110, 350)}
#: exp7's flip test (1,000 rows, no noise), t = 0, 0.1, …, 1.
FLIP_T = tuple(round(0.1 * i, 1) for i in range(11))
FLIP_TVD = (0.0, 0.005, 0.02, 0.045, 0.08, 0.125, 0.18, 0.245, 0.32, 0.405, 0.5)
FLIP_TC = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.5)
#: ≈ the chunked repair at t = 0 and t = 1.
FLIP_CHUNKED = (48.0, 450.0)
