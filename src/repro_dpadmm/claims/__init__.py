"""Claims files: load and validate `config/claims/*.yaml`, and evaluate each claim against the measured numbers.

This is the one claims path: the report and every notebook's "what we see" (`experiments.common.claims_table`) judge
claims here and nowhere else. The format is documented in `config/claims/README.md`. A claim is a quote from a paper
plus checks on the flat metrics an item writes (`results/<paper>/<item>/metrics.json`) or on a dataset sidecar
(`resources/processed/<name>.json`, for `source: dataset:<name>`).

Noise: beside a mean an item may write per-repeat values (`metrics["repeats"][key]`) or a standard error (`<key>.se`).
A comparison of noisy quantities is decided only beyond `z` standard errors of the difference (paired when both
operands have per-repeat values of the same length); inside that band its check is *inconclusive*. Quantities without
noise information are compared exactly.

Evidence kinds: every metric key has a kind (the file's `evidence:` patterns): `measured` (an algorithm run produced
it), `derived` (a formula of config values and paper bounds) or `given` (the data build or the config asserts it). The
kinds a claim's checks read decide its class, so that a claim that could not have failed is never "reproduced":

* **measured** (it reads a measured key): `reproduced` (every check passes), `inconclusive` (none fails, one is inside
  the noise), `degenerate` (none fails, one compares a side that is no better than its trivial reference: the
  majority-class rate, F(x0), the zero model), `partly` (some pass, some fail), `not reproduced` (checks fail, none
  passes);
* **analytic** (derived keys, no measured one): `holds` / `fails` (a theorem's arithmetic, an accountant comparison);
* **setup** (given keys only, or `setup: true`: our own construction): `setup ok` / `setup failed`;
* any class: `not run` (the item or dataset it needs was not run, or a variant's metrics are missing) and
  `not checkable` (nothing to check, a metric missing, null or not a number, or a malformed claim).

`variants:` re-evaluate a claim on the `<key>@<variant>` metrics of a choice the paper leaves open; `finding:` entries
explain a verdict and its cause, and a finding whose cause the evidence contradicts is flagged (a `paper` cause on a
verdict that a variant makes pass; a `choice` cause on a claim that fails beyond the noise under every variant). A check's numeric
thresholds carry `from:` (the paper's number or the rule) and, optionally, `paper_threshold:` (a looser threshold is
flagged).

Loading never raises on a bad claim: problems are collected (`ClaimsFile.problems`) so that a caller can list them
all; `validate_claims_file` is the strict form (raises `ClaimsError` listing every problem).

The package, by job: `load` (the schema, line numbers, the rules that span fields), `model` (what a claims file
holds), `kinds` (one small class per check kind, found by name in `CHECKS`: a new kind is one class), `noise` (the
numbers a check reads and how a noisy comparison is decided) and `judge` (a check's outcome, a claim's verdict).
"""

from .cases import SOME_CASES, Folded, fold_verdicts, folded_counts, summarise
from .judge import (
    CheckResult,
    Reading,
    Verdict,
    VariantVerdict,
    evaluate_check,
    cited,
    cited_keys,
    discount_implausible,
    evaluate_claim,
    fill_placeholders,
    flatten,
    placeholder_keys,
    with_cited,
)
from .kinds import CHECK_KINDS, CHECKS, CheckKind, check_keys, describe_check, looser_threshold
from .load import (
    SCHEMA_NAME,
    SOURCE_SCHEMA,
    claims_paths,
    load_all,
    load_all_strict,
    load_claims_file,
    parse_claims,
    schema_path,
    schema_problems,
    validate_claims_file,
)
from .model import (
    ALL_VERDICTS,
    ANALYTIC_VERDICTS,
    CAUSES,
    CLASS_OF_KIND,
    CLASS_VERDICTS,
    CLASSES,
    DECIDED_FAILING,
    FAILING,
    JUDGED,
    KINDS,
    PAPER_CAUSES,
    PASSING,
    RANGE_FIELDS,
    SETUP_VERDICTS,
    THRESHOLD_FIELDS,
    VERDICTS,
    Claim,
    ClaimsError,
    ClaimsFile,
    EvidenceRule,
)
from .noise import DEFAULT_NOISE_Z, DEGENERATE, FAIL, INCONCLUSIVE, MISSING, PASS, REPEATS_KEY, fmt

__all__ = [
    "ALL_VERDICTS", "ANALYTIC_VERDICTS", "CAUSES", "CHECKS", "CHECK_KINDS", "CLASSES", "CLASS_OF_KIND",
    "CLASS_VERDICTS", "DECIDED_FAILING", "DEFAULT_NOISE_Z", "DEGENERATE", "FAIL", "FAILING", "INCONCLUSIVE", "JUDGED",
    "KINDS", "MISSING", "PAPER_CAUSES", "PASS", "REPEATS_KEY", "SCHEMA_NAME", "SETUP_VERDICTS", "SOURCE_SCHEMA",
    "THRESHOLD_FIELDS", "VERDICTS", "CheckKind", "CheckResult", "Claim", "ClaimsError", "ClaimsFile", "EvidenceRule",
    "VariantVerdict", "Verdict", "Reading", "Folded", "SOME_CASES", "PASSING", "RANGE_FIELDS", "fold_verdicts", "folded_counts", "summarise",
    "fill_placeholders", "cited", "cited_keys", "discount_implausible", "placeholder_keys", "with_cited", "check_keys", "claims_paths", "describe_check", "evaluate_check", "evaluate_claim",
    "flatten", "fmt", "load_all", "load_all_strict", "load_claims_file", "looser_threshold", "parse_claims",
    "schema_path", "schema_problems", "validate_claims_file",
]
