"""The test runner's own operations (object "testRunner"): fail points, entities created during
a test, and the assertions on sessions, lsids, collections, indexes and connections.

Each takes the test's state (scenario.TestRun: its entities, the utility client, the fail points
to turn off) and the operation's arguments, and raises AssertionError when an assertion does not
hold. Not here: entity operations (dispatch.py) or the order of a test's steps (scenario.py).
"""
from pymongo.client_session import ClientSession
from pymongo.client_session_shared import _TxnState
from pymongo.monitoring import CommandStartedEvent
from pymongo.read_preferences import Primary

from entities import RunnerError

TRANSACTION_STATES = {
    "none": (_TxnState.NONE,),
    "starting": (_TxnState.STARTING,),
    "in_progress": (_TxnState.IN_PROGRESS,),
    "committed": (_TxnState.COMMITTED, _TxnState.COMMITTED_EMPTY),
    "aborted": (_TxnState.ABORTED,),
}


class Args:
    """A special operation's arguments; each must be taken, leftovers are an error."""

    def __init__(self, name, arguments):
        self.name = name
        self._args = dict(arguments or {})

    def take(self, key):
        if key not in self._args:
            raise RunnerError(f"{self.name}: argument {key} is required")
        return self._args.pop(key)

    def finish(self):
        if self._args:
            raise RunnerError(f"{self.name}: unsupported arguments {sorted(self._args)}")


def set_fail_point(run, client, command):
    """configureFailPoint through `client`; turned off after the test through the same client."""
    client.admin.command(command, read_preference=Primary())
    run.fail_points.append((client, command["configureFailPoint"]))


def fail_point(run, a):
    client = run.entities.client_of(a.take("client"))
    command = a.take("failPoint")
    a.finish()
    set_fail_point(run, client, command)


def targeted_fail_point(run, a):
    """On the server the session is pinned to: only mongoses pin sessions, so on a replica set
    (or a standalone) this is a test error, as in the unified format's definition."""
    session = run.entities.get(a.take("session"), ClientSession)
    a.take("failPoint")
    a.finish()
    if session._pinned_address is None:
        raise RunnerError("targetedFailPoint needs a session pinned to a mongos")
    raise RunnerError("targetedFailPoint on a pinned session is not supported")


def create_entities(run, a):
    specs = a.take("entities")
    a.finish()
    run.entities.create(specs)


def transaction_state(run, a):
    session = run.entities.get(a.take("session"), ClientSession)
    state = a.take("state")
    a.finish()
    if state not in TRANSACTION_STATES:
        raise RunnerError(f"unknown transaction state {state}")
    actual = session._transaction.state
    if actual not in TRANSACTION_STATES[state]:
        raise AssertionError(f"session transaction state is {actual}, expected {state}")


def session_pinned(expected):
    def check(run, a):
        session = run.entities.get(a.take("session"), ClientSession)
        a.finish()
        pinned = session._transaction.pinned_address is not None or (
            session._pinned_address is not None)
        if pinned != expected:
            raise AssertionError(f"session is {'' if pinned else 'not '}pinned")
    return check


def session_dirty(expected):
    def check(run, a):
        session = run.entities.get(a.take("session"), ClientSession)
        a.finish()
        dirty = session._server_session.dirty
        if dirty != expected:
            raise AssertionError(f"session is {'' if dirty else 'not '}dirty")
    return check


def last_two_lsids(run, client):
    if client not in run.entities.recorders:
        raise RunnerError(f"client {client} is not defined")
    started = [e for e in run.entities.recorders[client].events
               if isinstance(e, CommandStartedEvent)]
    if len(started) < 2:
        raise AssertionError(f"needs two commandStartedEvents, got {len(started)}")
    return started[-2].command.get("lsid"), started[-1].command.get("lsid")


def same_lsid(expected):
    def check(run, a):
        first, second = last_two_lsids(run, a.take("client"))
        a.finish()
        if (first == second) != expected:
            raise AssertionError(f"lsids of the last two commands: {first} and {second}")
    return check


def collection_exists(expected):
    def check(run, a):
        db, name = a.take("databaseName"), a.take("collectionName")
        a.finish()
        names = run.internal.get_database(db).list_collection_names()
        if (name in names) != expected:
            raise AssertionError(f"collection {db}.{name} {'missing' if expected else 'exists'}")
    return check


def index_exists(expected):
    def check(run, a):
        db, coll, index = a.take("databaseName"), a.take("collectionName"), a.take("indexName")
        a.finish()
        names = [i["name"] for i in run.internal[db][coll].list_indexes()]
        if (index in names) != expected:
            raise AssertionError(f"index {index} of {db}.{coll} "
                                 f"{'missing' if expected else 'exists'}: {names}")
    return check


def connections_checked_out(run, a):
    client = a.take("client")
    expected = a.take("connections")
    a.finish()
    run.entities.client_of(client)
    actual = run.entities.pool_recorders[client].checked_out
    if actual != expected:
        raise AssertionError(f"{actual} connections checked out, expected {expected}")


SPECIAL_OPERATIONS = {
    "assertCollectionExists": collection_exists(True),
    "assertCollectionNotExists": collection_exists(False),
    "assertDifferentLsidOnLastTwoCommands": same_lsid(False),
    "assertIndexExists": index_exists(True),
    "assertIndexNotExists": index_exists(False),
    "assertNumberConnectionsCheckedOut": connections_checked_out,
    "assertSameLsidOnLastTwoCommands": same_lsid(True),
    "assertSessionDirty": session_dirty(True),
    "assertSessionNotDirty": session_dirty(False),
    "assertSessionPinned": session_pinned(True),
    "assertSessionTransactionState": transaction_state,
    "assertSessionUnpinned": session_pinned(False),
    "createEntities": create_entities,
    "failPoint": fail_point,
    "targetedFailPoint": targeted_fail_point,
}


def run_special(run, operation):
    name = operation["name"]
    if name not in SPECIAL_OPERATIONS:
        raise RunnerError(f"test runner operation {name} not supported")
    SPECIAL_OPERATIONS[name](run, Args(name, operation.get("arguments")))
