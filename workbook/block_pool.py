"""Stage 3's block pool: reference-counted KV blocks, found by their chained keys.

Given code from stage 4 on: a later stage builds on the answers stage 3 asked for. This module
only re-exports them, under a name that says what they are; the code lives in the reference
module ``solutions.s03_block_pool``, which the learner of stage 3 writes for themselves.
"""
from solutions.s03_block_pool import *  # noqa: F403 - the stage's public names, re-exported as they are
