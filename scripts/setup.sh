#!/usr/bin/env bash
# Create a virtual environment with the course installed (the same `pip install` a notebook's first
# cell uses, editable here, with the grader and build tools) and the test tooling. Safe to re-run.
#
# torch: a machine that already has torch (Colab, ModelScope, a CUDA box) keeps it: the environment is
# created with --system-site-packages, torch and triton are never installed over it, and triton's pin
# is left out. Elsewhere the release course.toml's [torch] version names is installed (TORCH_SPEC
# overrides, e.g. a CUDA build's spec).
# Variables: PYTHON (interpreter, default python3), VENV (default .venv), REQUIREMENTS (default
# requirements.txt).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${VENV:-.venv}
REQUIREMENTS=${REQUIREMENTS:-requirements.txt}
if [ ! -x "$VENV/bin/python" ]; then
  if "$PY" -c "import torch" 2>/dev/null; then
    echo "keeping this machine's torch: $("$PY" -c 'import torch; print(torch.__version__)')"
    "$PY" -m venv --system-site-packages "$VENV"
  else
    "$PY" -m venv "$VENV"
  fi
fi
if "$VENV/bin/python" -c "import torch" 2>/dev/null; then
  KEEP_TORCH=1
else
  KEEP_TORCH=0
  TORCH_VERSION=$("$VENV/bin/python" -c 'import tomllib; print(tomllib.load(open("course.toml", "rb"))["torch"]["version"])')
  "$VENV/bin/python" -m pip install -q ${TORCH_SPEC:-torch==$TORCH_VERSION}
fi
reqs=$(mktemp)
trap 'rm -f "$reqs"' EXIT
if [ "$KEEP_TORCH" = 1 ]; then
  grep -v -E '^\s*(torch|triton)\b' "$REQUIREMENTS" > "$reqs" || true  # never replace the machine's torch stack
else
  cp "$REQUIREMENTS" "$reqs"
fi
"$VENV/bin/python" -m pip install -q -r "$reqs"
# jsonschema loads its optional checker of the "iri" formats, rfc3987-syntax, whenever it is imported, and
# that import builds some 35 Earley parsers: about 3.5 CPU-s in every process that reads a notebook with
# nbformat (each nbgrader command, the build, JupyterLab, the test workers). No schema that nbformat,
# nbgrader or Jupyter validates uses those formats (without the checker jsonschema leaves them unchecked),
# so the environment goes without it; pip installs it again with jupyter-events, so this runs every time.
"$VENV/bin/python" -m pip uninstall -q -y rfc3987-syntax 2>/dev/null || true
"$VENV/bin/python" -c "import torch, autograder; print('ready: torch', torch.__version__, '| course', autograder.__file__)"
