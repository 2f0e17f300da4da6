"""Stage 6's paged prefill: an engine that reuses cached KV blocks and computes only the rest.

Given code from stage 7 on: a later stage builds on the answers stage 6 asked for. This module
only re-exports them, under a name that says what they are; the code lives in the reference
module ``solutions.s06_paged_prefill``, which the learner of stage 6 writes for themselves.
"""
from solutions.s06_paged_prefill import *  # noqa: F403 - the stage's public names, re-exported as they are
