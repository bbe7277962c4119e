"""Executing one test of a unified-format file: initial data, entities, operations with their
expected results and errors, expected command events, and the collections' final contents.

Owns the order of those steps and their clean-up (fail points turned off, sessions ended,
clients closed), how an operation's outcome is checked (also inside withTransaction's callback),
and the verdict of a test. Not here: which tests apply (requirements.py), the operations
(dispatch.py, special.py) or the summary over files (run.py).
"""
from pymongo import ASCENDING
from pymongo.read_concern import ReadConcern
from pymongo.read_preferences import Primary
from pymongo.write_concern import WriteConcern

import dispatch
import expect_error
from entities import EVENT_TYPES, POOL_EVENT_TYPES, RunnerError, EntityMap
from matcher import Matcher, Mismatch, exactly_equal
from special import run_special
from streams import StreamTimeout

SCHEMA_MAJOR, SCHEMA_MINOR = 1, 21  # the newest schema version the spec files use


class TestFailure(Exception):
    """The test failed; the message says at which step and why."""


def schema_supported(version):
    parts = [int(p) for p in version.split(".")]
    major, minor = parts[0], (parts[1] if len(parts) > 1 else 0)
    return major == SCHEMA_MAJOR and minor <= SCHEMA_MINOR


def insert_initial_data(internal, initial_data):
    """Drops each collection and inserts its documents with a "majority" write concern, or
    creates it (with its createOptions) when it has none."""
    majority = WriteConcern(w="majority")
    for data in initial_data:
        db = internal.get_database(data["databaseName"])
        name = data["collectionName"]
        options = dict(data.get("createOptions", {}))
        db.get_collection(name, write_concern=majority).drop()
        if data["documents"]:
            if options:
                db.create_collection(name, write_concern=majority, check_exists=False, **options)
            db.get_collection(name, write_concern=majority).insert_many(data["documents"])
        else:
            db.create_collection(name, write_concern=majority, check_exists=False, **options)


def end_all_sessions(internal):
    """killAllSessions, so that a transaction a failed test left open holds nothing the next
    test touches (the unified format asks this of runners on replica sets)."""
    internal.admin.command("killAllSessions", [])


def check_outcome(internal, outcome):
    for data in outcome:
        coll = internal.get_database(data["databaseName"]).get_collection(
            data["collectionName"], read_preference=Primary(), read_concern=ReadConcern("local")
        )
        actual = list(coll.find({}, sort=[("_id", ASCENDING)]))
        try:
            exactly_equal(data["documents"], actual, path=data["collectionName"])
        except Mismatch as e:
            raise TestFailure(f"outcome: {e}") from None


def check_events(entities, matcher, expectations):
    for expected_for_client in expectations:
        client = expected_for_client["client"]
        event_type = expected_for_client.get("eventType", "command")
        if event_type == "command":
            recorders = entities.recorders
        elif event_type == "cmap":
            recorders = entities.pool_recorders
        else:
            raise RunnerError(f"eventType {event_type} not supported")
        if client not in recorders:
            raise RunnerError(f"client {client} is not defined")
        actual = list(recorders[client].events)
        expected = expected_for_client["events"]
        if expected_for_client.get("ignoreExtraEvents", False):
            actual = actual[: len(expected)]
        if len(actual) != len(expected):
            raise TestFailure(
                f"expectEvents for {client}: expected {len(expected)} events "
                f"{[next(iter(e.values())).get('commandName', next(iter(e))) for e in expected]}, "
                f"got {len(actual)}: {[describe_event(a) for a in actual]}"
            )
        for i, (e, a) in enumerate(zip(expected, actual)):
            try:
                match_event(matcher, e, a, f"expectEvents[{client}][{i}]")
            except Mismatch as m:
                raise TestFailure(str(m)) from None


def describe_event(event):
    name = getattr(event, "command_name", None)
    return type(event).__name__ + (f" {name}" if name else "")


def match_event(matcher, expected, actual, path):
    if len(expected) != 1:
        raise RunnerError(f"{path}: an expected event has exactly one key")
    (kind, fields), = expected.items()
    if kind in POOL_EVENT_TYPES:
        if not isinstance(actual, POOL_EVENT_TYPES[kind]):
            raise Mismatch(f"{path}: expected {kind}, got {describe_event(actual)}")
        if fields:
            raise RunnerError(f"{path}: fields of {kind} not supported: {sorted(fields)}")
        return
    if kind not in EVENT_TYPES:
        raise RunnerError(f"{path}: event {kind} not supported")
    if not isinstance(actual, EVENT_TYPES[kind]):
        raise Mismatch(f"{path}: expected {kind}, got {describe_event(actual)}")
    for field, value in fields.items():
        if field == "command" and kind == "commandStartedEvent":
            matcher.match(value, actual.command, root=True, path=f"{path}.command")
        elif field == "reply" and kind == "commandSucceededEvent":
            matcher.match(value, actual.reply, root=True, path=f"{path}.reply")
        elif field == "commandName":
            if actual.command_name != value:
                raise Mismatch(f"{path}: expected command {value}, got {actual.command_name}")
        elif field == "databaseName":
            if actual.database_name != value:
                raise Mismatch(f"{path}: expected database {value}, got {actual.database_name}")
        elif field == "hasServiceId":
            if (actual.service_id is not None) != value:
                raise Mismatch(f"{path}: hasServiceId {value}")
        elif field == "hasServerConnectionId":
            if (actual.server_connection_id is not None) != value:
                raise Mismatch(f"{path}: hasServerConnectionId {value}")
        else:
            raise RunnerError(f"{path}: event field {field} not supported")


class TestRun:
    """One test's state: its entity map and the fail points it configured."""

    def __init__(self, uri, internal, deployment):
        self.internal = internal
        self.entities = EntityMap(uri, deployment)
        self.matcher = Matcher(self.entities)
        self.fail_points = []  # (client, fail point name), to turn off afterwards

    def operation(self, index, op, nested=False):
        """Runs one operation and checks its outcome. Inside withTransaction's callback
        (`nested`), an error is raised as it is once checked, so that the driver sees it (and its
        labels), aborts, and may retry."""
        where = f"operation {index} ({op['name']})"
        if op["object"] == "testRunner":
            try:
                run_special(self, op)
            except RunnerError:
                raise
            except Exception as e:
                raise TestFailure(f"{where}: {expect_error.describe(e)}") from None
            return
        call = dispatch.prepare(self.entities, op, self.run_callback)
        try:
            result = call()
        except (RunnerError, TestFailure):
            raise
        except StreamTimeout as e:
            raise TestFailure(f"{where}: {e}") from None
        except Exception as e:
            if "expectError" not in op:
                if nested:
                    raise
                if op.get("ignoreResultAndError"):
                    return
                raise TestFailure(f"{where}: unexpected error {expect_error.describe(e)}") from None
            try:
                expect_error.check(op["expectError"], e, self.matcher)
            except Mismatch as m:
                raise TestFailure(f"{where}: {m}") from None
            if nested:
                # The callback fails with it, as the application's would: the driver aborts
                # and decides whether to retry.
                raise
            return
        if "expectError" in op:
            raise TestFailure(f"{where}: expected an error, got {result.value!r}")
        if "expectResult" in op and not op.get("ignoreResultAndError"):
            try:
                self.matcher.match(op["expectResult"], result.value, root=result.root,
                                   path="expectResult")
            except Mismatch as m:
                raise TestFailure(f"{where}: {m}") from None
        if "saveResultAsEntity" in op:
            self.entities.add(op["saveResultAsEntity"], result.entity)

    def run_callback(self, ops):
        """withTransaction's callback: its operations in order."""
        for index, op in enumerate(ops):
            self.operation(index, op, nested=True)

    def run(self, file_spec, test):
        try:
            if self.entities.deployment.topology != "single":
                end_all_sessions(self.internal)
            if "initialData" in file_spec:
                insert_initial_data(self.internal, file_spec["initialData"])
            self.entities.create(file_spec.get("createEntities", []))
            for index, op in enumerate(test["operations"]):
                self.operation(index, op)
            self.entities.stop_observing()
            if "expectEvents" in test:
                check_events(self.entities, self.matcher, test["expectEvents"])
            if "outcome" in test:
                check_outcome(self.internal, test["outcome"])
        except RunnerError as e:
            raise TestFailure(f"runner: {e}") from None
        finally:
            self.clean_up()

    def clean_up(self):
        """Turns off the fail points this test set, ends its sessions and closes its clients. A
        fail point that cannot be turned off would leak into later tests: that is an error."""
        try:
            for client, name in self.fail_points:
                client.admin.command({"configureFailPoint": name, "mode": "off"})
        finally:
            self.entities.close()


def run_test(uri, internal, deployment, file_spec, test):
    """None when the test passes; otherwise the reason it failed."""
    try:
        TestRun(uri, internal, deployment).run(file_spec, test)
    except TestFailure as e:
        return str(e)
    except Exception as e:  # set-up, outcome or clean-up failed
        return f"{type(e).__name__}: {e}"
    return None
