"""What every stage's checks share: probe helpers (``common.py``) and PyTorch's meta device
for device-contract probes (``meta.py``).

A stage's own spec and public checks live in its folder (``solutions/NN_<name>/checks.py``, with its words in
``checks.toml``) and are imported as ``autograder.checks.sNN``, the name a copy of the course ships them under:
importing this package lets :class:`autograder.core.layout.StageModules` serve that name from the stage folder.
It imports only :mod:`autograder.core`.
"""
from autograder.core import layout as _layout  # noqa: F401  (importing it installs the finder)
