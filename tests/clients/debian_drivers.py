"""The MongoDB drivers Debian packages, each running the same scenario against mayfly.

Each scenario (java/, go/, c/, php/, ruby/) does, and checks: connect; CRUD on a collection made
with the driver's own `create`; a cursor over 1,000 documents in batches of 50; an upsert and the
same update matching it; aggregate `$match` + `$group`; the `_ts` TTL index through the driver's
own index API (the PHP extension has none: the command its library sends); a document's own
`ttl`; `advanceClock` and the expiry at the exact second; a duplicate key and its code 11000.
The Java and Go scenarios also create a TTL index on a date field (MongoDB's own TTL model)
through their index APIs and check that a document expires at its date plus the index's value.

Each connects through a wire recorder (wire_recorder.py), and what the driver sent is checked
against what docs/compatibility.md's driver matrix says it sends: the BSON type of the TTL index's
`expireAfterSeconds`, the fields of `create` beyond the command name and the generic ones, and
the opcode and name of its handshake. A driver whose packages are missing fails (setup.sh
installs them with apt-get when asked); MAYFLY_CLIENTS_SKIP=java,go,... reports the named ones
as skipped instead, and MAYFLY_CLIENTS_MISSING=skip every one whose packages are missing (with
the command that installs them), never as passed.

run.py runs them all with the other scenarios; alone, against a fresh server:
`.venv/bin/python debian_drivers.py PATH/TO/mayfly [java go c php ruby]`.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from wire_recorder import Recorder, type_name

HERE = Path(__file__).resolve().parent
JAVA_JAR = "/usr/share/java/mongo-java-driver.jar"
GO_DRIVER = "/usr/share/gocode/src/go.mongodb.org/mongo-driver"
# Fields every driver may add to any command; not part of what `create` is asked to do.
GENERIC_FIELDS = {"$db", "lsid", "$readPreference", "$clusterTime", "writeConcern"}


@dataclass
class Driver:
    name: str
    # The Debian packages that provide it (setup.sh installs them).
    packages: list
    # (command, or path that must exist) pairs; any missing one is reported.
    needs: list
    # Builds into the directory it is given; returns the command that runs the scenario.
    build: object
    # What the driver sends, as the driver matrix records it.
    ttl_type: str
    create_fields: set = field(default_factory=set)
    handshake: tuple = (2004, "isMaster")
    # How many TTL indexes the scenario creates: the `_ts` one, and a date one where it has it.
    ttl_indexes: int = 1


def _java(out):
    classes = out / "java"
    classes.mkdir()
    _checked(["javac", "-d", str(classes), "-cp", JAVA_JAR, str(HERE / "java" / "Scenario.java")])
    return ["java", "-cp", f"{classes}:{JAVA_JAR}", "Scenario"]


def _go(out):
    binary = out / "go-scenario"
    env = dict(
        os.environ,
        GO111MODULE="off",
        GOPATH=f"{out / 'gopath'}:/usr/share/gocode",
        GOCACHE=str(out / "gocache"),
        GOFLAGS="",
    )
    _checked(["go", "build", "-o", str(binary), str(HERE / "go" / "scenario.go")], env)
    return [str(binary)]


def _c(out):
    binary = out / "c-scenario"
    flags = _checked(["pkg-config", "--cflags", "--libs", "libmongoc-1.0"]).split()
    # The index helper the scenario uses is deprecated in 1.23; it is still the driver's API.
    _checked(["cc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-Wno-deprecated-declarations",
              "-o", str(binary), str(HERE / "c" / "scenario.c"), *flags])
    return [str(binary)]


def _php(out):
    _checked(["php", "-r", "exit(extension_loaded('mongodb') ? 0 : 1);"])
    return ["php", str(HERE / "php" / "scenario.php")]


def _ruby(out):
    _checked(["ruby", "-e", "require 'mongo'"])
    return ["ruby", str(HERE / "ruby" / "scenario.rb")]


DRIVERS = [
    Driver("java", ["libmongodb-java", "default-jdk-headless"], ["javac", "java", JAVA_JAR], _java,
           ttl_type="long", create_fields={"autoIndexId", "capped"}, handshake=(2004, "ismaster"),
           ttl_indexes=2),
    Driver("go", ["golang-go", "golang-mongodb-mongo-driver-dev"], ["go", GO_DRIVER], _go,
           ttl_type="int", ttl_indexes=2),
    Driver("c", ["libmongoc-dev", "pkg-config", "gcc"], ["cc", "pkg-config"], _c, ttl_type="int"),
    Driver("php", ["php-cli", "php-mongodb"], ["php"], _php, ttl_type="int"),
    Driver("ruby", ["ruby-mongo"], ["ruby"], _ruby, ttl_type="int",
           handshake=(2004, "ismaster")),
]


class BuildFailed(Exception):
    pass


def _checked(cmd, env=None):
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise BuildFailed(f"{' '.join(cmd)} exited {done.returncode}\n{done.stdout}{done.stderr}")
    return done.stdout


def missing(driver):
    return [need for need in driver.needs
            if not (Path(need).exists() if need.startswith("/") else shutil.which(need))]


def skipped():
    return {name.strip() for name in os.environ.get("MAYFLY_CLIENTS_SKIP", "").split(",") if name.strip()}


def wire_problems(driver, recorder):
    """What the driver sent that the matrix does not say it sends."""
    problems = []
    ttl_types = [type_name(index["expireAfterSeconds"])
                 for command in recorder.commands("createIndexes")
                 for index in command["indexes"] if "expireAfterSeconds" in index]
    if ttl_types != [driver.ttl_type] * driver.ttl_indexes:
        problems.append(f"expireAfterSeconds sent as {ttl_types}, the matrix says "
                        f"{[driver.ttl_type] * driver.ttl_indexes}")
    creates = recorder.commands("create")
    fields = [set(c) - GENERIC_FIELDS - {"create"} for c in creates]
    if fields != [driver.create_fields]:
        problems.append(f"create sent with {fields}, the matrix says [{driver.create_fields}]")
    with recorder.lock:
        first = recorder.messages[0] if recorder.messages else (None, None)
    handshake = (first[0], next(iter(first[1] or {}), None))
    if handshake != driver.handshake:
        problems.append(f"handshake {handshake}, the matrix says {driver.handshake}")
    return problems


def scenarios(build_dir, run):
    """(name, scenario) pairs for run.py; a scenario returns (code, output), code None when the
    driver is skipped by MAYFLY_CLIENTS_SKIP."""
    for driver in DRIVERS:
        yield f"{driver.name}/ (Debian {driver.packages[0]})", \
            lambda uri, env, driver=driver: _scenario(driver, build_dir, run, uri, env)


def _scenario(driver, build_dir, run, uri, env):
    absent = missing(driver)
    if absent:
        why = (f"missing {', '.join(absent)}: install with `tests/clients/setup.sh --install-system-packages` "
               f"(as root) or `sudo apt-get install --no-install-recommends {' '.join(driver.packages)}`")
        skip = driver.name in skipped() or os.environ.get("MAYFLY_CLIENTS_MISSING") == "skip"
        return (None if skip else 1), why
    out = Path(build_dir) / driver.name
    out.mkdir(parents=True, exist_ok=True)
    try:
        command = driver.build(out)
    except BuildFailed as e:
        return 1, str(e)
    port = int(uri.rsplit(":", 1)[1].split("/", 1)[0])
    recorder = Recorder(port)
    try:
        code, output = run(command, dict(env, MAYFLY_URI=f"mongodb://127.0.0.1:{recorder.port}/"))
    finally:
        recorder.close()
    if code == 0:
        problems = wire_problems(driver, recorder)
        if problems:
            return 1, output + "\n".join(problems)
    return code, output


def main():
    import run as runner  # run.py imports this module; only the command line needs it back

    binary = os.path.abspath(sys.argv[1])
    wanted = set(sys.argv[2:]) or {d.name for d in DRIVERS}
    with tempfile.TemporaryDirectory() as tmp:
        log_path = os.path.join(tmp, "mayfly.log")
        proc, port = runner.start_server(binary, os.path.join(tmp, "data"), log_path)
        try:
            named = [(name, scenario) for name, scenario in scenarios(tmp, runner.run)
                     if name.split("/", 1)[0] in wanted]
            passed, failed, skipped = runner.run_all(named, f"mongodb://127.0.0.1:{port}/test", dict(os.environ))
        finally:
            failure = runner.stop_server(proc, log_path)
        if failure is not None:
            failed += 1
            print(f"FAIL {failure}", flush=True)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
