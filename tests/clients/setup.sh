#!/usr/bin/env bash
# Installs the real clients the scenarios drive: mongosh, the Node.js driver and Node.js 24
# (from npm, pinned in package-lock.json) and pymongo with its compressors (from PyPI, pinned in
# requirements.txt), and fetches MongoDB's CRUD specification tests for tests/crudspec/run.py.
# Idempotent: does nothing when they are already installed.
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

# The CRUD specification tests (unified test format) ship in pymongo's source distribution: the
# pinned version is downloaded by pip, which checks its sha256 against the one PyPI publishes
# (pinned here too), and the JSON files of test/crud/unified are extracted into crudspec/spec/
# (ignored by git).
CRUD_SPEC_PYMONGO=4.20.0
CRUD_SPEC_SHA256=f773b0aec28687587cdeda490463a82debc4566a4a3620dcc8dada9d2c0a1acd
spec_dir=../crudspec/spec
if [ "$(cat "$spec_dir/.pymongo-version" 2>/dev/null)" != "$CRUD_SPEC_PYMONGO" ]; then
  echo "clients: fetching the CRUD specification tests (pymongo $CRUD_SPEC_PYMONGO source distribution)"
  download=$(mktemp -d)
  trap 'rm -rf "$download"' EXIT
  echo "pymongo==$CRUD_SPEC_PYMONGO --hash=sha256:$CRUD_SPEC_SHA256" > "$download/requirements.txt"
  .venv/bin/pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    --require-hashes -r "$download/requirements.txt" -d "$download"
  sdist="$download/pymongo-$CRUD_SPEC_PYMONGO.tar.gz"
  echo "$CRUD_SPEC_SHA256  $sdist" | sha256sum --check --quiet
  rm -rf "$spec_dir"
  mkdir -p "$spec_dir"
  tar -xzf "$sdist" -C "$spec_dir" --strip-components=4 --wildcards \
    "pymongo-$CRUD_SPEC_PYMONGO/test/crud/unified/*.json"
  echo "$CRUD_SPEC_PYMONGO" > "$spec_dir/.pymongo-version"
fi
