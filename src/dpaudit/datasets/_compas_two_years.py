"""Registry entry ``compas-two-years``: ProPublica's two-year follow-up file (see :mod:`._compas`)."""

from dpaudit.datasets._compas import INFO_TWO_YEARS as INFO

__all__ = ["INFO"]
