"""Kernel of the centralised Newton solvers (algorithms/centralized.py): the weighted Gram matrix X^T diag(c) X of a
CSR matrix X (N, d), the data part of the logistic Hessian.

scipy forms it as two sparse products, `X.T @ sp.diags(c) @ X`, and then a dense copy: 17 ms for Adult's 40,000
rows, where one sweep over the rows adding each row's outer product takes 7 ms. The sums are scipy's: entry (i, k)
adds the terms (X_ji c_j) X_jk over the rows j in increasing order, from 0.0 (its sparse product keeps no entry
whose sum is 0, which the dense copy then holds as +0.0; so a -0.0 sum is written as +0.0 here), and the array is
Fortran-ordered as scipy's. No fastmath.
"""

from __future__ import annotations

import numba
import numpy as np
import scipy.sparse as sp


@numba.njit(cache=True)
def _gram_rows(indptr, indices, data, c, out):
    out[:] = 0.0
    for j in range(indptr.size - 1):
        lo, hi = np.uint64(indptr[j]), np.uint64(indptr[j + 1])
        cj = c[j]
        for a in range(lo, hi):
            t = data[a] * cj
            oi = out[np.uint64(indices[a])]
            for b in range(lo, hi):
                oi[np.uint64(indices[b])] += t * data[b]
    for i in range(out.shape[0]):
        for k in range(out.shape[1]):
            if out[i, k] == 0.0:
                out[i, k] = 0.0


def weighted_gram(X: sp.csr_matrix, c: np.ndarray) -> np.ndarray:
    """X^T diag(c) X as a dense (d, d) array, equal bit for bit to `weighted_gram_reference`. X: CSR with sorted
    indices (scipy's canonical form)."""
    if not (sp.issparse(X) and X.format == "csr" and X.has_sorted_indices):
        raise ValueError("weighted_gram needs a CSR matrix with sorted indices")
    c = np.ascontiguousarray(c, dtype=np.float64)
    if c.shape != (X.shape[0],):
        raise ValueError(f"c must have one weight per row of X, shape ({X.shape[0]},); got {c.shape}")
    out = np.empty((X.shape[1], X.shape[1]))
    _gram_rows(X.indptr, X.indices, np.asarray(X.data, dtype=np.float64), c, out)
    # scipy's result is CSC, whose dense copy is Fortran-ordered; the same layout keeps later BLAS products (H @ z,
    # whose order of sums follows the layout; H is not exactly symmetric) the same
    return np.asfortranarray(out)


def weighted_gram_reference(X: sp.csr_matrix, c: np.ndarray) -> np.ndarray:
    """scipy's form (what algorithms/centralized.py computed)."""
    return np.asarray((X.T @ sp.diags(c) @ X).todense())
