"""Each paper's private step as an object that can be calibrated, run, audited and accounted (see `base`): one module
per paper (`huang2019`, `zhang2018`, `xu2020`, `hu2020`). Used by the equal-privacy frontier and both audits."""
