"""Empirical privacy audits: lower bounds on epsilon from runs of a mechanism, whatever the mechanism.

* `two_datasets`: many trials of one release on two neighbouring datasets D_0, D_1, a threshold test, and a
  Clopper-Pearson lower bound on epsilon (Jagielski et al. 2020; Nasr et al. 2021).
* `trials`: how those trials are produced from a mechanism's own code at the cost of one vectorised draw
  (`TrialNoise`, the affine sampler), and one audit of a release with its noise as claimed and as a mis-calibrated
  control (`AuditCase`, `audit_variants`).
* `canaries`: worst-case neighbouring records shared by several mechanisms (the gradient canary, the least-used
  coordinates of the one-run canaries).
* `one_run`: the one-run audit of a whole training run with many canaries (Steinke, Nasr and Jagielski 2023).
* `fdp_one_run`: the f-DP analysis of the same guesses (Mahloujifar, Melis and Chaudhuri 2024): the audited mu of a
  Gaussian trade-off and an (epsilon, delta) bound that does not pay Steinke et al.'s 2 m delta.
* `power`: what a one-run audit of a Gaussian mechanism can be expected to show with m canaries, and the canaries a
  target needs (to choose settings before running them).

This is the privacy layer: nothing here imports an algorithm or a mechanism. A mechanism (repro_dpadmm.mechanisms)
hands the audit what its trials need: a release function of the dataset index, the noise factor and one generator
per trial (`trials.Step`), or per-canary scores of a run.
"""
