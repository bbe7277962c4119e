"""Runs MongoDB's driver specification tests (unified test format) against fresh mayfly servers.

Usage: tests/clients/.venv/bin/python tests/crudspec/run.py PATH/TO/mayfly [--suite NAME]...
       [--only TEXT] [--verbose] [--show-failures]

First checks the runner's own matching rules (test_matcher.py). Then, for each suite (SUITES:
CRUD against a standalone; transactions, the convenient transaction API, retryable writes and
reads, sessions and change streams against a one-member replica set), starts a server of that
topology (in-memory storage, test commands on) the way tests/clients/run.py does, runs every
test of every file in tests/crudspec/spec/SUITE/ (the JSON files of pymongo's source
distribution, fetched by tests/clients/setup.sh), and holds the results to
tests/crudspec/expected-failures/SUITE.txt, both ways: a failure not listed there, and a listed
test that passes (or no longer exists, or does not apply), fail the run. Tests whose
runOnRequirements the server does not meet are counted as not applicable, by requirement.

--suite NAME runs only that suite (repeatable). --only TEXT runs the files and tests whose
"file: description" contains TEXT (the lists are then checked only for those). --verbose prints
every verdict; --show-failures prints each failure as a line for the list, with the failure
message in place of the reason.
"""
import argparse
import collections
import importlib.util
import io
import os
import sys
import tempfile
import time
import unittest
from pathlib import Path

import pymongo
from bson import json_util

import scenario
import test_matcher
from requirements import Deployment, runner_limit

HERE = Path(__file__).resolve().parent
SPEC_DIR = HERE / "spec"
EXPECTED_FAILURES = HERE / "expected-failures"
CLIENTS_RUN = HERE.parent / "clients" / "run.py"
JSON_OPTIONS = json_util.JSONOptions(tz_aware=False)
SERVER_FLAGS = ("--enable-test-commands", "--storage", "memory")
REPLICA_SET = "rs0"
SLOW_TEST = 5  # seconds; a test that takes longer is named, so the run's time stays explained


class Suite:
    """One directory of spec files, with its title and the topology its server runs in."""

    def __init__(self, name, title, replica_set):
        self.name = name
        self.title = title
        self.replica_set = replica_set

    def flags(self):
        return SERVER_FLAGS + (("--replSet", REPLICA_SET) if self.replica_set else ())

    def uri(self, port):
        query = f"?replicaSet={REPLICA_SET}" if self.replica_set else ""
        return f"mongodb://127.0.0.1:{port}/{query}"


SUITES = [
    Suite("crud", "CRUD", replica_set=False),
    Suite("transactions", "transactions", replica_set=True),
    Suite("transactions-convenient-api", "convenient transaction API", replica_set=True),
    Suite("retryable-writes", "retryable writes", replica_set=True),
    Suite("retryable-reads", "retryable reads", replica_set=True),
    Suite("sessions", "sessions", replica_set=True),
    Suite("change-streams", "change streams", replica_set=True),
]


def load_clients_runner():
    """tests/clients/run.py, for its server start and stop (same flags, same readiness check)."""
    spec = importlib.util.spec_from_file_location("clients_run", CLIENTS_RUN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def read_expected_failures(path):
    """{(file, description): reason} from lines `file.json: description  # reason`."""
    expected = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        file_name, sep, rest = line.partition(": ")
        description, sep2, reason = rest.rpartition("  # ")
        if not sep or not sep2 or not reason.strip() or not description:
            sys.exit(f"{path}:{number}: expected `file.json: description  # reason`: {line}")
        key = (file_name, description)
        if key in expected:
            sys.exit(f"{path}:{number}: listed twice: {file_name}: {description}")
        expected[key] = reason.strip()
    return expected


def run_file(path, uri, internal, deployment, only):
    """Yields (file, description, verdict, detail) for each test of one file; verdict is
    "pass", "fail" or "n/a" (detail: the failure, or the unmet requirement)."""
    spec = json_util.loads(path.read_text(), json_options=JSON_OPTIONS)
    name = path.name
    tests = [t for t in spec["tests"] if not only or only in f"{name}: {t['description']}"]
    if not scenario.schema_supported(spec["schemaVersion"]):
        for test in tests:
            yield name, test["description"], "fail", f"schemaVersion {spec['schemaVersion']} not supported"
        return
    file_unmet = deployment.unmet_any(spec.get("runOnRequirements"))
    for test in tests:
        description = test["description"]
        unmet = file_unmet or deployment.unmet_any(test.get("runOnRequirements"))
        if unmet:
            yield name, description, "n/a", unmet
            continue
        if "skipReason" in test:
            yield name, description, "n/a", f"skipReason: {test['skipReason']}"
            continue
        limit = runner_limit(path.parent.name, name, test)
        if limit:
            yield name, description, "n/a", limit
            continue
        started = time.monotonic()
        failure = scenario.run_test(uri, internal, deployment, spec, test)
        took = time.monotonic() - started
        if took > SLOW_TEST:
            print(f"SLOW ({took:.0f}s) {name}: {description}", flush=True)
        yield name, description, ("fail" if failure else "pass"), failure


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--suite", action="append", choices=[s.name for s in SUITES])
    parser.add_argument("--only", default="")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--show-failures", action="store_true")
    args = parser.parse_args()
    rules = unittest.defaultTestLoader.loadTestsFromModule(test_matcher)
    rules_output = io.StringIO()
    if not unittest.TextTestRunner(stream=rules_output).run(rules).wasSuccessful():
        print(rules_output.getvalue())
        sys.exit("the runner's matching rules are broken (tests/crudspec/test_matcher.py)")
    clients_run = load_clients_runner()
    problems = 0
    for suite in SUITES:
        if not args.suite or suite.name in args.suite:
            problems += run_suite(suite, clients_run, args)
    sys.exit(1 if problems else 0)


def run_suite(suite, clients_run, args):
    """Runs one suite against a fresh server; returns its surprises plus a failed server stop."""
    files = sorted((SPEC_DIR / suite.name).glob("*.json"))
    if not files:
        sys.exit(f"{SPEC_DIR / suite.name} holds no spec files: run tests/clients/setup.sh first")
    expected = read_expected_failures(EXPECTED_FAILURES / f"{suite.name}.txt")
    started = time.time()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        log_path = os.path.join(tmp, "mayfly.log")
        proc, port = clients_run.start_server(
            os.path.abspath(args.binary), os.path.join(tmp, "data"), log_path, suite.flags()
        )
        uri = suite.uri(port)
        try:
            internal = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
            deployment = Deployment(internal)
            for path in files:
                for result in run_file(path, uri, internal, deployment, args.only):
                    results.append(result)
                    if args.verbose:
                        name, description, verdict, detail = result
                        print(f"{verdict.upper():4} {name}: {description}"
                              + (f"\n     {detail}" if detail else ""), flush=True)
            internal.close()
        finally:
            failure = clients_run.stop_server(proc, log_path)
    if failure is not None:
        print(f"FAIL {suite.title}: {failure}")
    surprises = report(suite, results, expected, args, deployment, time.time() - started)
    return surprises + (failure is not None)


def report(suite, results, expected, args, deployment, took):
    """Prints the summary and every surprise; returns the number of surprises."""
    listing = f"{EXPECTED_FAILURES.name}/{suite.name}.txt"
    verdicts = {(name, description): (verdict, detail) for name, description, verdict, detail in results}
    if args.only:
        expected = {k: v for k, v in expected.items() if args.only in f"{k[0]}: {k[1]}"}
    unexpected = [(k, d) for k, (v, d) in verdicts.items() if v == "fail" and k not in expected]
    fixed, stale = [], []
    for key in expected:
        verdict = verdicts.get(key, (None, None))[0]
        if verdict == "pass":
            fixed.append(key)
        elif verdict != "fail":
            stale.append((key, "not applicable" if verdict == "n/a" else "no such test"))
    if args.show_failures:
        for (name, description), (verdict, detail) in verdicts.items():
            if verdict == "fail":
                print(f"{name}: {description}  # {detail}")
    for (name, description), detail in unexpected:
        print(f"UNEXPECTED FAILURE {name}: {description}\n    {detail}")
    for name, description in fixed:
        print(f"NOW PASSES (remove it from {listing}) {name}: {description}")
    for (name, description), why in stale:
        print(f"LISTED BUT {why.upper()} (remove it from {listing}) {name}: {description}")
    counts = collections.Counter(v for v, _ in verdicts.values())
    not_applicable = collections.Counter(d for v, d in verdicts.values() if v == "n/a")
    print(f"{suite.title} specification tests against {deployment.describe()}, {took:.0f}s:")
    print(f"  {counts['pass']} passed, {counts['fail']} failed "
          f"({counts['fail'] - len(unexpected)} expected, {len(unexpected)} unexpected), "
          f"{counts['n/a']} not applicable")
    for reason, n in sorted(not_applicable.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"    {n:4} not applicable: {reason}")
    surprises = len(unexpected) + len(fixed) + len(stale)
    print(f"  {surprises} surprises" if surprises else "  no surprises")
    return surprises


if __name__ == "__main__":
    main()
