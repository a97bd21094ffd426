"""The operator's side: the `mnemos` command line (cli.app) and the local stack of `mnemos up`."""

import os

# One BLAS thread per process unless the operator sets it: the products mnemos runs (a query
# against thousands of fact vectors, a commit's re-check) take a fraction of a millisecond on one
# thread, and OpenBLAS's thread pool turns them into ~10 ms on a machine whose cores are busy
# (measured: a 2,000 × 384 float32 product, 0.1 ms on one thread, 8–10 ms with the pool on 2
# loaded cores; bench/backlog.py's 10,000 messages spent most of their store time there). Set
# before anything imports numpy: `mnemos` and `python -m cli` import this package first.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
