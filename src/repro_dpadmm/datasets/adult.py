"""UCI Adult preprocessing exactly as docs/choices.md#adult-preprocessing (HUANG §VI-A; ZKL-ICML §5 steps (1)-(5)).

1. Concatenate adult.data and adult.test; skip the `|1x3 Cross validator` line and blank lines; strip the trailing
   dot of the test labels.
2. Remove every row with a missing value (`?`).
3. One-hot encode each categorical attribute (m categories -> m columns, no level dropped); continuous attributes
   stay one raw column each. Columns follow the attribute order of adult.names.
4. Divide each column by its maximum (an all-zero column stays zero).
5. Row normalisation: `per_row` x / max(1, ||x||) (default) or `global_max` x / max_i ||x_i||.
6. Labels: >50K -> +1, <=50K -> -1.

`levels="observed"` (HUANG: 45,222 x 104) one-hot encodes the levels present after removal; `levels="names"`
(ZKL: 45,222 x 105) enumerates the levels listed in adult.names, which adds the all-zero `workclass=Never-worked`
column. ZKL report 45,223 rows; no missing-value rule gives that, so the 45,222 real rows are used (docs/choices.md#adult-zkl-columns).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import numpy as np

ATTRIBUTES = [
    ("age", "continuous"), ("workclass", "categorical"), ("fnlwgt", "continuous"),
    ("education", "categorical"), ("education-num", "continuous"), ("marital-status", "categorical"),
    ("occupation", "categorical"), ("relationship", "categorical"), ("race", "categorical"),
    ("sex", "categorical"), ("capital-gain", "continuous"), ("capital-loss", "continuous"),
    ("hours-per-week", "continuous"), ("native-country", "categorical"),
]
ROW_NORMALISATIONS = ("per_row", "global_max")


def read_rows(path: Path) -> list[list[str]]:
    """Rows of an Adult file as stripped strings, without the cross-validator line, blank lines or label dots."""
    rows = []
    with open(path, newline="") as fh:
        for lineno, rec in enumerate(csv.reader(fh, skipinitialspace=True), start=1):
            if not rec or (len(rec) == 1 and not rec[0].strip()) or rec[0].startswith("|"):
                continue
            rec = [f.strip() for f in rec]
            if len(rec) != len(ATTRIBUTES) + 1:
                raise ValueError(f"{path}:{lineno}: expected {len(ATTRIBUTES) + 1} comma-separated fields, "
                                 f"got {len(rec)}; is this the UCI adult.data/adult.test file?")
            rec[-1] = rec[-1].rstrip(".")
            rows.append(rec)
    return rows


def levels_from_names(path: Path) -> dict[str, list[str]]:
    """Categorical levels as listed in adult.names, in the listed order."""
    text = Path(path).read_text()
    out: dict[str, list[str]] = {}
    for name, kind in ATTRIBUTES:
        m = re.search(rf"^{re.escape(name)}:\s*(.+?)\.\s*$", text, flags=re.M)
        if m is None:
            raise ValueError(f"{path}: attribute {name!r} not found; is this the UCI adult.names file?")
        if kind == "categorical":
            out[name] = [v.strip() for v in m.group(1).split(",")]
    return out


def preprocess(data_path: Path, test_path: Path, names_path: Path | None = None, *, levels: str = "observed",
               row_normalisation: str = "per_row") -> dict:
    """Return {'X', 'y', 'feature_names', 'n_removed'} following docs/choices.md#adult-preprocessing."""
    if row_normalisation not in ROW_NORMALISATIONS:
        raise ValueError(f"row_normalisation must be one of {ROW_NORMALISATIONS}, got {row_normalisation!r}")
    if levels not in ("observed", "names"):
        raise ValueError(f"levels must be 'observed' or 'names', got {levels!r}")
    rows = read_rows(Path(data_path)) + read_rows(Path(test_path))
    complete = [r for r in rows if "?" not in r]
    table = np.array(complete, dtype=object)

    listed = levels_from_names(names_path) if levels == "names" else None
    columns, names = [], []
    for j, (name, kind) in enumerate(ATTRIBUTES):
        col = table[:, j]
        if kind == "continuous":
            columns.append(col.astype(float)[:, None])
            names.append(name)
            continue
        observed = set(col)
        if listed is not None:
            cats = listed[name]
            unknown = observed - set(cats)
            if unknown:
                raise ValueError(f"levels of {name} not listed in adult.names: {sorted(unknown)}")
        else:
            order = {v: i for i, v in enumerate(_NAMES_ORDER.get(name, []))}
            cats = sorted(observed, key=lambda v: (order.get(v, len(order)), v))
        columns.append((col[:, None] == np.array(cats, dtype=object)[None, :]).astype(float))
        names.extend(f"{name}={c}" for c in cats)
    X = np.hstack(columns)

    col_max = X.max(axis=0)
    X = X / np.where(col_max > 0, col_max, 1.0)  # guard: an all-zero column stays zero
    norms = np.linalg.norm(X, axis=1)
    if row_normalisation == "per_row":
        X = X / np.maximum(1.0, norms)[:, None]
    else:
        X = X / norms.max()

    labels = table[:, -1]
    bad = set(labels) - {">50K", "<=50K"}
    if bad:
        raise ValueError(f"unexpected Adult labels {sorted(bad)}")
    y = np.where(labels == ">50K", 1.0, -1.0)
    return {"X": X, "y": y, "feature_names": names, "n_removed": len(rows) - len(complete),
            "n_rows_read": len(rows)}


# Level order of adult.names, used to order observed levels deterministically and readably.
_NAMES_ORDER = {
    "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov", "State-gov",
                  "Without-pay", "Never-worked"],
    "education": ["Bachelors", "Some-college", "11th", "HS-grad", "Prof-school", "Assoc-acdm", "Assoc-voc", "9th",
                  "7th-8th", "12th", "Masters", "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool"],
    "marital-status": ["Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
                       "Married-spouse-absent", "Married-AF-spouse"],
    "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial", "Prof-specialty",
                   "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical", "Farming-fishing", "Transport-moving",
                   "Priv-house-serv", "Protective-serv", "Armed-Forces"],
    "relationship": ["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
}
