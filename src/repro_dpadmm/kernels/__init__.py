"""Compiled kernels of the hot loops (issue 20), one module per topic.

Each kernel is a numba function over plain arrays that fuses passes numpy/scipy would make separately (for example a
sparse product, an elementwise weight and the transposed product in one sweep over the rows). Every kernel has a
pure-numpy reference next to it, written as the code was before the kernel existed; the tests run both on the same
inputs and require them to agree (bit for bit where the order of the floating-point operations is the same). The
kernels are compiled on first use and cached on disk (`cache=True`), so later processes load them.

Why compiled code here and not numpy: the profiles of the local solvers show that the sparse products and the
elementwise passes around them each read the data again; numpy cannot fuse them, and the per-call overhead of many
small array operations dominates the small problems of a node.
"""
