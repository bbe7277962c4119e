#!/usr/bin/env bash
# Installs the real clients the scenarios drive: mongosh, the Node.js driver and Node.js 24
# (from npm, pinned in package-lock.json), pymongo with its compressors (from PyPI, pinned in
# requirements.txt) and the Java, Go, C, PHP and Ruby drivers Debian packages (debian_drivers.py
# runs them), and fetches MongoDB's driver specification tests for tests/crudspec/run.py.
# Idempotent: does nothing when they are already installed.
#
# System packages (apt-get, as root) are installed only when asked: with
# --install-system-packages or CI=true; on a terminal it asks first; otherwise it says which are
# missing and how to install them, and their scenarios are reported as skipped.
set -euo pipefail
cd "$(dirname "$0")"

install_system=
case "${1:-}" in
  --install-system-packages) install_system=yes ;;
  "") [ "${CI:-}" = true ] && install_system=yes ;;
  *) echo "usage: tests/clients/setup.sh [--install-system-packages]" >&2; exit 2 ;;
esac

# A node_modules that is a link (to an install shared by several checkouts) is never reinstalled
# through the link: npm ci would empty the shared install, and a fresh checkout's lock file is
# always newer than it.
if [ ! -x node_modules/.bin/node ] || {
  [ ! -L node_modules ] && [ package-lock.json -nt node_modules/.package-lock.json ]
}; then
  echo "clients: installing mongosh and the Node.js driver (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

if [ ! -x .venv/bin/python ] || ! .venv/bin/python -c 'import pymongo, snappy, mongoengine, beanie; from backports import zstd' 2>/dev/null; then
  echo "clients: installing pymongo (pip)"
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
fi

# The drivers Debian packages (their versions are Debian 12's: Java 3.6.3, Go 1.8.4, C 1.23.1,
# PHP extension 1.15.0, Ruby 2.5.1): a JDK, Go, PHP and Ruby, so never installed unasked. Left
# to the user, the scenarios of the missing ones fail with the command to install them, unless
# MAYFLY_CLIENTS_SKIP names them or MAYFLY_CLIENTS_MISSING=skip (scripts/test's default outside
# CI) reports them as skipped.
debian_packages=$(.venv/bin/python -c 'import debian_drivers as d; print(" ".join(p for x in d.DRIVERS for p in x.packages))')
# shellcheck disable=SC2086
absent=$(dpkg-query -W -f='${db:Status-Status} ${Package}\n' $debian_packages 2>/dev/null | awk '$1 == "installed" {print $2}' | sort | comm -13 - <(tr ' ' '\n' <<<"$debian_packages" | sort) || true)
if [ -n "$absent" ]; then
  # shellcheck disable=SC2086
  absent=$(echo $absent)
  install_command="apt-get install --no-install-recommends $absent"
  if [ -z "$install_system" ] && [ -t 0 ] && command -v apt-get >/dev/null; then
    read -r -p "clients: install the drivers Debian packages ($absent) with apt-get? [y/N] " answer
    case "$answer" in [yY]*) install_system=yes ;; esac
  fi
  if [ "$install_system" = yes ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
      echo "clients: installing system packages needs root and apt-get; run: sudo $install_command" >&2
      exit 1
    fi
    echo "clients: installing the drivers Debian packages: $absent"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $absent >/dev/null
  else
    echo "clients: not installing the drivers Debian packages $absent; their scenarios are skipped." \
      "To run them: tests/clients/setup.sh --install-system-packages (as root), or: sudo $install_command" >&2
  fi
fi

# The driver specification tests in the unified test format (CRUD, and for replica-set mode
# transactions, the convenient transaction API, retryable writes and reads, sessions and change
# streams) ship in pymongo's source distribution: the pinned version is downloaded by pip, which
# checks its sha256 against the one PyPI publishes (pinned here too), and the JSON files of each
# suite's directory are extracted into crudspec/spec/SUITE/ (ignored by git). The marker names
# the version and the suites, so a checkout holding an older set fetches again.
SPEC_PYMONGO=4.20.0
SPEC_SHA256=f773b0aec28687587cdeda490463a82debc4566a4a3620dcc8dada9d2c0a1acd
# suite=directory in the source distribution (every *.json directly inside it)
SPEC_SUITES=(
  crud=test/crud/unified
  transactions=test/transactions/unified
  transactions-convenient-api=test/transactions-convenient-api/unified
  retryable-writes=test/retryable_writes/unified
  retryable-reads=test/retryable_reads/unified
  sessions=test/sessions
  change-streams=test/change_streams/unified
)
spec_dir=../crudspec/spec
marker="$SPEC_PYMONGO ${SPEC_SUITES[*]}"
if [ "$(cat "$spec_dir/.pymongo-version" 2>/dev/null)" != "$marker" ]; then
  echo "clients: fetching the specification tests (pymongo $SPEC_PYMONGO source distribution)"
  download=$(mktemp -d)
  trap 'rm -rf "$download"' EXIT
  echo "pymongo==$SPEC_PYMONGO --hash=sha256:$SPEC_SHA256" > "$download/requirements.txt"
  .venv/bin/pip download --quiet --disable-pip-version-check --no-deps --no-binary :all: \
    --require-hashes -r "$download/requirements.txt" -d "$download"
  sdist="$download/pymongo-$SPEC_PYMONGO.tar.gz"
  echo "$SPEC_SHA256  $sdist" | sha256sum --check --quiet
  rm -rf "$spec_dir"
  for entry in "${SPEC_SUITES[@]}"; do
    suite=${entry%%=*}
    source=${entry#*=}
    mkdir -p "$spec_dir/$suite"
    # --no-wildcards-match-slash: only the directory's own files, not its subdirectories'.
    tar -xzf "$sdist" -C "$spec_dir/$suite" --strip-components=$(($(tr -cd / <<<"$source" | wc -c) + 2)) \
      --wildcards --no-wildcards-match-slash "pymongo-$SPEC_PYMONGO/$source/*.json"
  done
  echo "$marker" > "$spec_dir/.pymongo-version"
fi
