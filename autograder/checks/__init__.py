"""Each stage's checks and probes (``sNN.py``, loaded by :func:`autograder.core.spec.load_stage`) and what they
share (``common.py``). It imports only :mod:`autograder.core`.
"""
