#!/usr/bin/env bash
# Installs the real clients the scenarios drive: mongosh, the Node.js driver and Node.js 24
# (from npm, pinned in package-lock.json) and pymongo with its compressors (from PyPI, pinned in
# requirements.txt). Idempotent: does nothing when they are already installed.
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -x node_modules/.bin/node ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "clients: installing mongosh and the Node.js driver (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import pymongo, snappy; from backports import zstd' 2>/dev/null; then
  echo "clients: installing pymongo (pip)"
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
fi
