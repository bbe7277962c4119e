"""Runs every real-client scenario against a freshly started mayfly server.

Usage: python3 tests/clients/run.py PATH/TO/mayfly

Starts the server on a free port with its own data directory, test commands enabled and a
manual clock (so TTL scenarios move time exactly with advanceClock), runs each scenario in
mongosh/ (mongosh --file), node/ (Node.js driver) and pymongo/ (pymongo), plus the mongosh
start-up check, the TTL recipes of docs/ttl-recipes.md (recipes/: mongosh, the Node.js driver,
Mongoose, pymongo, MongoEngine and Beanie, and a check that the page shows each as its file has
it), then the drivers Debian packages (Java, Go, C, PHP, Ruby; debian_drivers.py: the
same scenario in each, with what each sends on the wire checked), then stops the server with
SIGTERM and requires a clean exit.

Then replica-set mode: a server started with `--replSet rs0`, and the scenarios that need one
(REPLSET_SCENARIOS: mongosh/replset.js, node/change_stream.mjs, pymongo/transactions.py,
node/transactions_mongoose.mjs) connecting with `replicaSet=rs0` (they are left out of the
standalone run above).

Then the Cosmos DB connection strings: more servers with TLS required and authentication
on. One runs as replica set `globaldb` (`--replSet globaldb`, as Cosmos DB answers) with an
account and key given as a Cosmos portal would show them (a key with `/`, `+` and `=`), used in
the portal's full string (`ssl=true&replicaSet=globaldb&retrywrites=false&maxIdleTimeMS=120000
&appName=@acct@`); the other, a standalone, has the emulator's default account and its
documented string (which names no replica set). Each client in cosmos/ connects with that string,
changed only in host and port (and the CA file to trust), and runs CRUD. A client that cannot
connect fails its scenario. Then the Cosmos profile: a server with `--compat cosmos` (and
`--cosmos-throughput`) that pymongo (cosmos/profile.py) and mongosh (cosmos/profile.js) reach
with the portal's string, and one with `--cosmos-version 3.6` that the Node.js driver, newer
than such an account, must refuse to talk to (cosmos/old_account.mjs).

Then the Cosmos profile out of the box (`--compat cosmos` and nothing else about TLS): the
portal's string and the emulator's documented string, unchanged but for host and port, with
the CA trusted the documented way (the string's tlsCAFile, or the driver's tlsCAFile option),
connect and write (cosmos/connect.*); the string the start-up log prints, pasted as is, does
too; and a `--storage memory` server started three times keeps the same CA file. The CA
directory is a temporary one (MAYFLY_CAROOT), found with `mayfly ca-path`.

`--only cosmos-connection` runs just that last part. Ends with the line "N passed, N failed, N skipped": a scenario is
skipped only when MAYFLY_CLIENTS_SKIP names it or MAYFLY_CLIENTS_MISSING=skip and its packages
are missing (debian_drivers.py); run it with the virtual
environment's Python (.venv/bin/python), which has the bson module the wire recorder decodes with.
"""
import json
import re
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.parse
from itertools import chain
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODE = HERE / "node_modules" / ".bin" / "node"
MONGOSH = HERE / "node_modules" / "mongosh" / "bin" / "mongosh.js"
PYTHON = HERE / ".venv" / "bin" / "python"
TIMEOUT = 600

# A Cosmos account as the portal shows it; the key has the characters users must percent-encode.
COSMOS_ACCOUNT = "mayfly-ci"
COSMOS_KEY = "k3y/With+Slash+And/Plus0nlyForTests9Xq7Lw2Vb5Nc8Md1Fg4Hj6Kl0Pz3Rt5Sy7Uw9Av2Bx4Cz6De8=="
# The emulator's documented connection string: its account and published well-known key.
EMULATOR_URI = ("mongodb://localhost:C2y6yDjf5%2FR%2Bob0N8A7Cgv30VRDJIWEHLM%2B4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw%2FJw%3D%3D"
                "@localhost:10255/admin?ssl=true")


def start_server(binary, dbpath, log_path, extra=("--enable-test-commands", "--clock", "manual")):
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [binary, "--port", "0", "--dbpath", dbpath, "--log-format", "json", *extra],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 30
    while time.time() < deadline:
        for line in open(log_path):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("id") == 23016:  # mongod's "Waiting for connections"
                return proc, int(event["attr"]["port"])
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    proc.kill()
    sys.exit("mayfly did not start:\n" + open(log_path).read())


def run(cmd, env, stdin=None):
    try:
        done = subprocess.run(
            cmd, env=env, input=stdin, capture_output=True, text=True, timeout=TIMEOUT, cwd=HERE
        )
        return done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as e:
        return 124, f"timed out after {TIMEOUT}s\n{e.stdout or ''}{e.stderr or ''}"


def mongosh_startup(uri, env):
    """mongosh connects interactively, its greeting shows no error or warning, and the shell's
    own `show dbs` / `show collections` work."""
    code, out = run(
        [str(NODE), str(MONGOSH), uri],
        env,
        stdin="db.runCommand({ping: 1}).ok\ndb.version()\n"
        "db.shown.insertOne({_id: 1}).acknowledged\nshow dbs\nshow collections\n",
    )
    problems = []
    if code != 0:
        problems.append(f"exit code {code}")
    if "Using MongoDB:\t\t7.0.0" not in out:
        problems.append("greeting does not show 'Using MongoDB: 7.0.0'")
    for line in out.splitlines():
        low = line.lower()
        if "warning" in low or "error" in low:
            problems.append(f"unexpected line: {line}")
    if "test> 1" not in out or "test> 7.0.0" not in out:
        problems.append("ping/version answers missing")
    if "test> true" not in out:
        problems.append("insertOne was not acknowledged")
    if not re.search(r"(^|> )test\s+\d", out, re.MULTILINE):
        problems.append("show dbs does not list the test database")
    if "shown" not in out:
        problems.append("show collections does not list the collection")
    return (1 if problems else 0), out + "\n".join(problems)


# Scenarios that need a replica-set server (`--replSet rs0`, `replicaSet=rs0` in the URI):
# mongosh/*.js and node/*.mjs files.
REPLSET_SCENARIOS = {
    "replset.js",
    "change_stream.mjs",
    "transactions_mongoose.mjs",
    "transactions.py",
}


RECIPES_DOC = HERE.parent.parent / "docs" / "ttl-recipes.md"
# The files whose `recipe:start` … `recipe:end` part docs/ttl-recipes.md shows.
RECIPE_SOURCES = ["recipes/*", "java/Scenario.java", "go/scenario.go"]


def recipe_part(path):
    """The lines between a file's `recipe:start` and `recipe:end` markers, dedented."""
    lines, inside = [], False
    for line in path.read_text().splitlines():
        if line.strip().endswith("recipe:start"):
            inside = True
        elif line.strip().endswith("recipe:end"):
            inside = False
        elif inside:
            lines.append(line)
    return textwrap.dedent("\n".join(lines))


def recipes_shown(uri, env):
    """docs/ttl-recipes.md shows every recipe exactly as the file the test command runs has it."""
    doc = RECIPES_DOC.read_text()
    problems = []
    for pattern in RECIPE_SOURCES:
        for path in sorted(HERE.glob(pattern)):
            part = recipe_part(path)
            if not part.strip():
                problems.append(f"{path.relative_to(HERE)} has no recipe:start/recipe:end part")
            elif f"\n{part}\n```" not in doc:
                problems.append(f"{RECIPES_DOC.name} does not show {path.relative_to(HERE)}'s recipe:\n{part}")
    return (1 if problems else 0), "\n".join(problems)


def recipes():
    """Each TTL recipe, run by its client (mongosh for .js, Node.js for .mjs, Python for .py)."""
    for f in sorted((HERE / "recipes").iterdir()):
        if f.suffix == ".js":
            yield f"recipes/{f.name}", lambda uri, env, f=f: run(
                [str(NODE), str(MONGOSH), uri, "--quiet", "--file", str(f)], env
            )
        elif f.suffix == ".mjs":
            yield f"recipes/{f.name}", lambda uri, env, f=f: run([str(NODE), str(f)], env)
        elif f.suffix == ".py":
            yield f"recipes/{f.name}", lambda uri, env, f=f: run([str(PYTHON), str(f)], env)
    yield "recipes shown in docs/ttl-recipes.md", recipes_shown


def scenarios():
    for f in sorted((HERE / "mongosh").glob("*.js")):
        if f.name in REPLSET_SCENARIOS:
            continue
        yield f"mongosh/{f.name}", lambda uri, env, f=f: run(
            [str(NODE), str(MONGOSH), uri, "--quiet", "--file", str(f)], env
        )
    yield "mongosh/startup (greeting)", mongosh_startup
    for f in sorted((HERE / "node").glob("*.mjs")):
        if f.name in REPLSET_SCENARIOS:
            continue
        yield f"node/{f.name}", lambda uri, env, f=f: run([str(NODE), str(f)], env)
    for f in sorted((HERE / "pymongo").glob("*.py")):
        if f.name in REPLSET_SCENARIOS:
            continue
        yield f"pymongo/{f.name}", lambda uri, env, f=f: run([str(PYTHON), str(f)], env)
    yield from recipes()


def replset_scenarios():
    for name in sorted(REPLSET_SCENARIOS):
        if name.endswith(".py"):
            f = HERE / "pymongo" / name
            yield f"pymongo/{name} (--replSet rs0)", lambda uri, env, f=f: run([str(PYTHON), str(f)], env)
            continue
        if name.endswith(".mjs"):
            f = HERE / "node" / name
            yield f"node/{name} (--replSet rs0)", lambda uri, env, f=f: run([str(NODE), str(f)], env)
            continue
        f = HERE / "mongosh" / name
        yield f"mongosh/{name} (--replSet rs0)", lambda uri, env, f=f: run(
            [str(NODE), str(MONGOSH), uri, "--quiet", "--file", str(f)], env
        )


def cosmos_scenarios():
    """Each client's Cosmos scenario, run with the connection string in MAYFLY_URI."""
    cosmos = HERE / "cosmos"
    yield "mongosh", lambda uri, env: run(
        [str(NODE), str(MONGOSH), uri, "--quiet", "--file", str(cosmos / "crud.js")], env
    )
    yield "node", lambda uri, env: run([str(NODE), str(cosmos / "crud.mjs")], env)
    yield "pymongo", lambda uri, env: run([str(PYTHON), str(cosmos / "crud.py")], env)


# `--cosmos-throughput` of the Cosmos-profile server: RU/s per collection.
PROFILE_THROUGHPUT = 100


def cosmos_profile_scenarios():
    """The Cosmos profile's scenarios (`--compat cosmos`), with the portal's string."""
    cosmos = HERE / "cosmos"
    yield "pymongo profile", lambda uri, env: run([str(PYTHON), str(cosmos / "profile.py")], env)
    yield "mongosh profile", lambda uri, env: run(
        [str(NODE), str(MONGOSH), uri, "--quiet", "--file", str(cosmos / "profile.js")], env
    )


def old_account_scenarios():
    """A driver newer than the account's version (`--cosmos-version 3.6`)."""
    yield "node", lambda uri, env: run([str(NODE), str(HERE / "cosmos" / "old_account.mjs")], env)


def run_all(named_scenarios, uri, env):
    """Runs each (name, scenario) with the connection string; prints PASS, FAIL (with the
    client's output and the string) or SKIP (code None, with why) for each and returns
    (passed, failed, skipped)."""
    passed = failed = skipped = 0
    for name, scenario in named_scenarios:
        started = time.time()
        code, out = scenario(uri, env)
        took = time.time() - started
        if code is None:
            skipped += 1
            print(f"SKIP {name}: {out}", flush=True)
        elif code == 0:
            passed += 1
            print(f"PASS {name} ({took:.1f}s)", flush=True)
        else:
            failed += 1
            print(f"FAIL {name} ({took:.1f}s)\n{out}\n{uri}", flush=True)
    return passed, failed, skipped


def stop_server(proc, log_path):
    """SIGTERM, then a clean exit within 30 s; returns the failure, or None."""
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = "killed after 30s"
    if code == 0:
        return None
    return f"server exit on SIGTERM: {code}\n" + open(log_path).read()[-4000:]


def portal_uri(port, ca):
    """The portal's connection string with the host and port changed (and the CA to trust)."""
    portal_key = urllib.parse.quote(COSMOS_KEY, safe="")
    return (
        f"mongodb://{COSMOS_ACCOUNT}:{portal_key}@localhost:{port}/?ssl=true&replicaSet=globaldb"
        f"&retrywrites=false&maxIdleTimeMS=120000&appName=@{COSMOS_ACCOUNT}@&tlsCAFile={ca}"
    )


def cosmos_servers(binary, tmp):
    """(name, server arguments, account, connection string for a port and CA file, extra
    environment, scenarios)."""
    yield (
        "Cosmos portal string",
        ["--tlsMode", "requireTLS", "--auth", "--replSet", "globaldb",
         "--cosmos-account", COSMOS_ACCOUNT, "--cosmos-key", COSMOS_KEY],
        COSMOS_ACCOUNT,
        portal_uri,
        lambda ca: {},
        cosmos_scenarios,
    )
    # The documented emulator string, unchanged but for the port; the generated CA is trusted
    # the way emulator users trust the emulator's certificate: through the environment.
    yield (
        "emulator string",
        # The emulator's string names no replica set, nor retrywrites=false: a standalone.
        ["--tlsMode", "requireTLS", "--auth"],
        "localhost",
        lambda port, ca: EMULATOR_URI.replace(":10255/", f":{port}/"),
        lambda ca: {"NODE_EXTRA_CA_CERTS": ca, "SSL_CERT_FILE": ca},
        cosmos_scenarios,
    )
    # The Cosmos profile, as the portal's string reaches an account (it implies --replSet
    # globaldb), throttled so that a burst meets 16500.
    yield (
        "Cosmos profile (--compat cosmos)",
        ["--compat", "cosmos", "--tlsMode", "requireTLS", "--auth",
         "--cosmos-account", COSMOS_ACCOUNT, "--cosmos-key", COSMOS_KEY,
         "--cosmos-throughput", str(PROFILE_THROUGHPUT)],
        COSMOS_ACCOUNT,
        portal_uri,
        lambda ca: {"MAYFLY_THROUGHPUT": str(PROFILE_THROUGHPUT)},
        cosmos_profile_scenarios,
    )
    # An account of an older version than the drivers support.
    yield (
        "Cosmos 3.6 profile (--compat cosmos --cosmos-version 3.6)",
        ["--compat", "cosmos", "--cosmos-version", "3.6"],
        "old",
        lambda port, ca: f"mongodb://localhost:{port}/?replicaSet=globaldb&retrywrites=false",
        lambda ca: {},
        old_account_scenarios,
    )


def connect_scenarios():
    """Each client connects with MAYFLY_URI (and MAYFLY_CA_OPTION as its driver option) and
    writes (cosmos/connect.*)."""
    cosmos = HERE / "cosmos"

    def mongosh(uri, env):
        ca = env.get("MAYFLY_CA_OPTION")
        option = ["--tls", "--tlsCAFile", ca] if ca else []
        return run([str(NODE), str(MONGOSH), uri, *option, "--quiet", "--file", str(cosmos / "connect.js")], env)

    yield "mongosh", mongosh
    yield "node", lambda uri, env: run([str(NODE), str(cosmos / "connect.mjs")], env)
    yield "pymongo", lambda uri, env: run([str(PYTHON), str(cosmos / "connect.py")], env)


def printed_uri(log_path):
    """The connection string the server's start-up log prints ("connect with")."""
    deadline = time.time() + 10
    while time.time() < deadline:
        for line in open(log_path):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("msg") == "connect with":
                return event["attr"]["uri"]
        time.sleep(0.1)
    return None


def ca_path(binary):
    """`mayfly ca-path`: the CA file (under MAYFLY_CAROOT)."""
    return subprocess.run([binary, "ca-path"], capture_output=True, text=True, check=True).stdout.strip()


def cosmos_connection(binary, tmp):
    """The Cosmos profile out of the box; returns (passed, failed)."""
    passed = failed = 0
    account = ["--cosmos-account", COSMOS_ACCOUNT, "--cosmos-key", COSMOS_KEY]
    ca = ca_path(binary)
    servers = [
        ("portal string", ["--compat", "cosmos", *account], COSMOS_ACCOUNT,
         lambda port: portal_uri(port, ca), {}),
        ("emulator string", ["--compat", "cosmos"], "localhost",
         lambda port: EMULATOR_URI.replace(":10255/", f":{port}/"),
         {"MAYFLY_CA_OPTION": ca, "MAYFLY_EXPECT_RETRYABLE_REFUSAL": "1"}),
    ]
    # Three starts of a memory server (a start and two restarts), the CA trusted once.
    for start in range(3):
        servers.append((f"printed string, --storage memory start {start + 1}",
                        ["--compat", "cosmos", "--storage", "memory"], "localhost", None, {}))
    first_ca = None
    for n, (name, args, account_name, uri_for, extra) in enumerate(servers):
        dbpath = os.path.join(tmp, f"cosmos-connection-{n}")
        log_path = os.path.join(tmp, f"cosmos-connection-{n}.log")
        proc, port = start_server(binary, dbpath, log_path, args)
        try:
            uri = uri_for(port) if uri_for else printed_uri(log_path)
            if uri is None:
                failed += 1
                print(f"FAIL {name}: no 'connect with' line\n" + open(log_path).read()[-4000:], flush=True)
                continue
            env = dict(os.environ, **extra, MAYFLY_URI=uri, MAYFLY_ACCOUNT=account_name,
                       DO_NOT_TRACK="1", MONGOSH_NO_UPDATE_CHECK="1")
            named = ((f"cosmos/connect ({client}) with the {name} against --compat cosmos", s)
                     for client, s in connect_scenarios())
            ok, bad, _ = run_all(named, uri, env)
            passed, failed = passed + ok, failed + bad
            content = open(ca, "rb").read()
            if first_ca is None:
                first_ca = content
            elif content == first_ca:
                passed += 1
                print(f"PASS the CA file is unchanged after the {name}", flush=True)
            else:
                failed += 1
                print(f"FAIL the CA file changed at the {name}", flush=True)
        finally:
            failure = stop_server(proc, log_path)
        if failure is not None:
            failed += 1
            print(f"FAIL {name}: {failure}", flush=True)
    return passed, failed


def main():
    # Imported here: tests/crudspec/run.py loads this file for its server start and stop, from
    # elsewhere, and needs none of the drivers.
    import debian_drivers

    import argparse
    parser = argparse.ArgumentParser(description="Runs the real-client scenarios against mayfly.")
    parser.add_argument("binary", help="path to the mayfly binary")
    parser.add_argument("--only", choices=["cosmos-connection"],
                        help="run only this part (the Cosmos profile out of the box)")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    for tool in (NODE, MONGOSH, PYTHON):
        if not tool.exists():
            sys.exit(f"{tool} is missing: run tests/clients/setup.sh first")
    with tempfile.TemporaryDirectory() as tmp:
        # The development CA goes to a temporary directory, never the user's home.
        os.environ["MAYFLY_CAROOT"] = os.path.join(tmp, "ca")
        if args.only == "cosmos-connection":
            passed, failed = cosmos_connection(binary, tmp)
            print(f"{passed} passed, {failed} failed, 0 skipped")
            sys.exit(1 if failed else 0)
        log_path = os.path.join(tmp, "mayfly.log")
        proc, port = start_server(binary, os.path.join(tmp, "data"), log_path)
        uri = f"mongodb://127.0.0.1:{port}/test"
        env = dict(os.environ, MAYFLY_URI=uri, DO_NOT_TRACK="1", MONGOSH_NO_UPDATE_CHECK="1")
        passed = failed = skipped = 0
        try:
            drivers = debian_drivers.scenarios(os.path.join(tmp, "drivers"), run)
            passed, failed, skipped = run_all(chain(scenarios(), drivers), uri, env)
        finally:
            failure = stop_server(proc, log_path)
        if failure is None:
            passed += 1
            print("PASS server exits 0 on SIGTERM", flush=True)
        else:
            failed += 1
            print(f"FAIL {failure}", flush=True)
        rs_log = os.path.join(tmp, "replset.log")
        proc, port = start_server(binary, os.path.join(tmp, "replset"), rs_log, ("--replSet", "rs0"))
        # Retryable writes need txnNumber support, which this scenario does not test.
        uri = f"mongodb://localhost:{port}/test?replicaSet=rs0&retryWrites=false"
        env = dict(os.environ, MAYFLY_URI=uri, DO_NOT_TRACK="1", MONGOSH_NO_UPDATE_CHECK="1")
        try:
            ok, bad, _ = run_all(replset_scenarios(), uri, env)
            passed, failed = passed + ok, failed + bad
        finally:
            failure = stop_server(proc, rs_log)
        if failure is not None:
            failed += 1
            print(f"FAIL replica-set server: {failure}", flush=True)
        for n, (server, args, account, uri_for, env_for, scenarios_for) in enumerate(cosmos_servers(binary, tmp)):
            dbpath = os.path.join(tmp, f"cosmos-{n}")
            log_path = os.path.join(tmp, f"cosmos-{n}.log")
            proc, port = start_server(binary, dbpath, log_path, args)
            ca = ca_path(binary)
            uri = uri_for(port, ca)
            env = dict(
                os.environ,
                **env_for(ca),
                MAYFLY_URI=uri,
                MAYFLY_ACCOUNT=account,
                MAYFLY_ANONYMOUS_URI=f"mongodb://localhost:{port}/?tls=true&tlsCAFile={ca}",
                DO_NOT_TRACK="1",
                MONGOSH_NO_UPDATE_CHECK="1",
            )
            try:
                named = ((f"cosmos/{client} with the {server}", scenario) for client, scenario in scenarios_for())
                ok, bad, _ = run_all(named, uri, env)
                passed, failed = passed + ok, failed + bad
            finally:
                failure = stop_server(proc, log_path)
            if failure is not None:
                failed += 1
                print(f"FAIL {server}: {failure}", flush=True)
        ok, bad = cosmos_connection(binary, tmp)
        passed, failed = passed + ok, failed + bad
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
