#!/usr/bin/env bash
# Create .venv and install the course into it. Safe to re-run.
# torch: a CPU build by default (TORCH_SPEC overrides, e.g. TORCH_SPEC="torch==2.13.0" on a CUDA box
# with PyTorch's CUDA index); an already importable torch is kept (Colab, ModelScope).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q ${TORCH_SPEC:-torch==2.13.0}
fi
.venv/bin/python -m pip install -q -r requirements.txt
.venv/bin/python -c "import torch, triton, nbgrader; print('ready: torch', torch.__version__, '| cuda:', torch.cuda.is_available(), '| nbgrader', nbgrader.__version__)"
