#!/usr/bin/env bash
# Headless Chromium + Playwright for the JupyterLab UI test (never `playwright install`: we use
# Debian's chromium). Needs root for apt-get; skips quietly when chromium is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium missing and not root: install it with your package manager" >&2; exit 1
  fi
fi
.venv/bin/python -m pip install -q playwright
