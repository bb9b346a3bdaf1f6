"""Reliable membership-inference evaluation (spec ``mia.md``).

LiRA on many models with leave-one-out fits, TPR at low FPR computed three ways (naive
concatenation, calibrated "PP" concatenation, mean per-record), Student-t thresholds and the
finite-population correction of efficient LiRA (Jälkö, Pradhan, Räisä, Honkela, arXiv 2605.25819;
Carlini et al., IEEE S&P 2022).
"""
