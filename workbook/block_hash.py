"""Stage 2's block keys: splitting a prompt into blocks and chaining their SHA-256 keys.

Given code from stage 3 on: a later stage builds on the answers stage 2 asked for. This module
only re-exports them, under a name that says what they are; the code lives in the reference
module ``solutions.s02_block_hash``, which the learner of stage 2 writes for themselves.
"""
from solutions.s02_block_hash import *  # noqa: F403 - the stage's public names, re-exported as they are
