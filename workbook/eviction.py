"""Stage 4's eviction: the LRU free queue and the pool that evicts from it.

Given code from stage 5 on: a later stage builds on the answers stage 4 asked for. This module
only re-exports them, under a name that says what they are; the code lives in the reference
module ``solutions.s04_eviction``, which the learner of stage 4 writes for themselves.
"""
from solutions.s04_eviction import *  # noqa: F403 - the stage's public names, re-exported as they are
