"""Audit a model's differential-privacy claim (issue 27).

:mod:`~dpaudit.mia.claim.learners` names the learners an audit trains (DP ones at a claimed (ε, δ),
their non-private counterparts, deliberately broken ones, a user's ``package.module:factory``);
:mod:`~dpaudit.mia.claim.dpsgd` is the DP-SGD learner (jax-privacy's accountant, CPU);
:mod:`~dpaudit.mia.claim.canaries` chooses the canaries and which of them are trained on.
This package imports none of them (they load scikit-learn or JAX): import the module you need.
"""
