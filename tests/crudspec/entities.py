"""The entity map of one test: clients (with their command and connection-pool monitoring),
databases, collections, sessions, buckets, change streams and saved results, created from
`createEntities` (or saved by operations).

Owns entity creation and lookup (unique names, referential integrity, type checks) and the
events each client records. Not here: operations on entities (operations.py and its siblings)
or the checks on recorded events (scenario.py).
"""
import gridfs
import pymongo
from pymongo import common, monitoring
from pymongo.change_stream import ChangeStream
from pymongo.client_session import TransactionOptions
from pymongo.command_cursor import CommandCursor
from pymongo.database import Database
from pymongo.read_concern import ReadConcern
from pymongo.read_preferences import (
    Nearest,
    Primary,
    PrimaryPreferred,
    Secondary,
    SecondaryPreferred,
)
from pymongo.server_api import ServerApi
from pymongo.write_concern import WriteConcern

# A server marked unknown after an error (a fail point's NotWritablePrimary, a closed connection)
# is selectable again after its next heartbeat: at 100ms, as pymongo's own unified test runner
# sets them (test/unified_format.py, client_knobs), instead of the 500ms to 10s defaults.
common.HEARTBEAT_FREQUENCY = 0.1
common.MIN_HEARTBEAT_INTERVAL = 0.1

# Commands whose events carry credentials; never observed (Command Logging and Monitoring spec).
SENSITIVE_COMMANDS = {
    "authenticate", "saslstart", "saslcontinue", "getnonce", "createuser", "updateuser",
    "copydbgetnonce", "copydbsaslstart", "copydb",
}
EVENT_TYPES = {
    "commandStartedEvent": monitoring.CommandStartedEvent,
    "commandSucceededEvent": monitoring.CommandSucceededEvent,
    "commandFailedEvent": monitoring.CommandFailedEvent,
}
# Connection pool (CMAP) events a test may observe: the spec's name -> pymongo's event class.
POOL_EVENT_TYPES = {
    "poolCreatedEvent": monitoring.PoolCreatedEvent,
    "poolReadyEvent": monitoring.PoolReadyEvent,
    "poolClearedEvent": monitoring.PoolClearedEvent,
    "poolClosedEvent": monitoring.PoolClosedEvent,
    "connectionCreatedEvent": monitoring.ConnectionCreatedEvent,
    "connectionReadyEvent": monitoring.ConnectionReadyEvent,
    "connectionClosedEvent": monitoring.ConnectionClosedEvent,
    "connectionCheckOutStartedEvent": monitoring.ConnectionCheckOutStartedEvent,
    "connectionCheckOutFailedEvent": monitoring.ConnectionCheckOutFailedEvent,
    "connectionCheckedOutEvent": monitoring.ConnectionCheckedOutEvent,
    "connectionCheckedInEvent": monitoring.ConnectionCheckedInEvent,
}
READ_PREFERENCES = {
    "primary": Primary,
    "primarypreferred": PrimaryPreferred,
    "secondary": Secondary,
    "secondarypreferred": SecondaryPreferred,
    "nearest": Nearest,
}


class RunnerError(Exception):
    """A test file refers to an entity wrongly (undefined, duplicate, unexpected type) or asks
    for something this runner does not support; the test fails with this, never as a pass."""


class CommandRecorder(monitoring.CommandListener):
    """Records the command events of one client that the test observes, in order."""

    def __init__(self, observe, ignore, observe_sensitive):
        self.kinds = tuple(EVENT_TYPES[name] for name in observe if name in EVENT_TYPES)
        self.ignore = {name.lower() for name in ignore} | {"configurefailpoint"}
        self.observe_sensitive = observe_sensitive
        self.enabled = True
        self.events = []

    def _record(self, event):
        if not self.enabled or not isinstance(event, self.kinds):
            return
        name = event.command_name.lower()
        if name in self.ignore:
            return
        if not self.observe_sensitive:
            redacted = (
                isinstance(event, monitoring.CommandStartedEvent) and not event.command
            ) or (isinstance(event, monitoring.CommandSucceededEvent) and not event.reply)
            if name in SENSITIVE_COMMANDS or (name in ("hello", "ismaster") and redacted):
                return
        self.events.append(event)

    started = succeeded = failed = _record


class PoolRecorder(monitoring.ConnectionPoolListener):
    """Records the connection pool events of one client that the test observes, in order, and
    counts the connections checked out now (assertNumberConnectionsCheckedOut)."""

    def __init__(self, observe):
        self.kinds = tuple(POOL_EVENT_TYPES[name] for name in observe if name in POOL_EVENT_TYPES)
        self.enabled = True
        self.events = []
        self.checked_out = 0

    def _record(self, event):
        if isinstance(event, monitoring.ConnectionCheckedOutEvent):
            self.checked_out += 1
        elif isinstance(event, monitoring.ConnectionCheckedInEvent):
            self.checked_out -= 1
        if self.enabled and isinstance(event, self.kinds):
            self.events.append(event)

    pool_created = pool_ready = pool_cleared = pool_closed = _record
    connection_created = connection_ready = connection_closed = _record
    connection_check_out_started = connection_check_out_failed = _record
    connection_checked_out = connection_checked_in = _record


def read_preference(spec):
    spec = dict(spec)
    mode = spec.pop("mode")
    kwargs = {}
    if "tagSets" in spec:
        kwargs["tag_sets"] = spec.pop("tagSets")
    if "maxStalenessSeconds" in spec:
        kwargs["max_staleness"] = spec.pop("maxStalenessSeconds")
    if "hedge" in spec:
        kwargs["hedge"] = spec.pop("hedge")
    if spec:
        raise RunnerError(f"readPreference fields {sorted(spec)} not supported")
    cls = READ_PREFERENCES.get(mode.lower())
    if cls is None:
        raise RunnerError(f"unknown read preference mode {mode}")
    return cls(**kwargs) if kwargs else cls()


def write_concern(spec):
    spec = dict(spec)
    kwargs = {}
    for name, kwarg in (("w", "w"), ("journal", "j"), ("wtimeoutMS", "wtimeout")):
        if name in spec:
            kwargs[kwarg] = spec.pop(name)
    if spec:
        raise RunnerError(f"writeConcern fields {sorted(spec)} not supported")
    return WriteConcern(**kwargs)


def transaction_options(spec):
    """A session's defaultTransactionOptions (or startTransaction's arguments) for pymongo."""
    spec = dict(spec)
    kwargs = {}
    if "readConcern" in spec:
        kwargs["read_concern"] = ReadConcern(**spec.pop("readConcern"))
    if "writeConcern" in spec:
        kwargs["write_concern"] = write_concern(spec.pop("writeConcern"))
    if "readPreference" in spec:
        kwargs["read_preference"] = read_preference(spec.pop("readPreference"))
    if "maxCommitTimeMS" in spec:
        kwargs["max_commit_time_ms"] = spec.pop("maxCommitTimeMS")
    if spec:
        raise RunnerError(f"transaction options {sorted(spec)} not supported")
    return TransactionOptions(**kwargs)


def common_options(spec, what):
    """readConcern/readPreference/writeConcern of a database or collection as pymongo kwargs."""
    spec = dict(spec or {})
    kwargs = {}
    if "readConcern" in spec:
        kwargs["read_concern"] = ReadConcern(**spec.pop("readConcern"))
    if "readPreference" in spec:
        kwargs["read_preference"] = read_preference(spec.pop("readPreference"))
    if "writeConcern" in spec:
        kwargs["write_concern"] = write_concern(spec.pop("writeConcern"))
    if spec:
        raise RunnerError(f"{what} {sorted(spec)} not supported")
    return kwargs


class EntityMap:
    """Entities by name for one test; closes its clients and ends its sessions at the end."""

    def __init__(self, uri, deployment):
        self.uri = uri
        self.deployment = deployment
        self._entities = {}
        self.recorders = {}  # client id -> CommandRecorder
        self.pool_recorders = {}  # client id -> PoolRecorder
        self.sessions_lsid = {}  # session id -> lsid document, kept after the session ends

    def __contains__(self, name):
        return name in self._entities

    def add(self, name, value):
        if name in self._entities:
            raise RunnerError(f"entity {name} already exists")
        self._entities[name] = value

    def get(self, name, *types):
        if name not in self._entities:
            raise RunnerError(f"entity {name} is not defined")
        value = self._entities[name]
        if types and not isinstance(value, types):
            raise RunnerError(f"entity {name} is a {type(value).__name__}, not {types}")
        return value

    def value(self, name):
        """A saved BSON value ($$matchesEntity)."""
        return self.get(name)

    def session_lsid(self, name):
        if name not in self.sessions_lsid:
            raise RunnerError(f"session entity {name} is not defined")
        return self.sessions_lsid[name]

    def client_of(self, name):
        return self.get(name, pymongo.MongoClient)

    def create(self, specs):
        for spec in specs:
            if len(spec) != 1:
                raise RunnerError(f"an entity has exactly one key: {sorted(spec)}")
            (kind, options), = spec.items()
            create = getattr(self, f"_create_{kind}", None)
            if create is None:
                raise RunnerError(f"entity type {kind} not supported")
            create(dict(options))

    def _create_client(self, spec):
        name = spec.pop("id")
        uri_options = spec.pop("uriOptions", {})
        multiple = spec.pop("useMultipleMongoses", None)
        if multiple and self.deployment.topology == "sharded":
            raise RunnerError("useMultipleMongoses on a sharded cluster is not supported")
        observe = spec.pop("observeEvents", [])
        unknown = set(observe) - set(EVENT_TYPES) - set(POOL_EVENT_TYPES)
        if unknown:
            raise RunnerError(f"observeEvents {sorted(unknown)} not supported")
        recorder = CommandRecorder(
            observe,
            spec.pop("ignoreCommandMonitoringEvents", []),
            spec.pop("observeSensitiveCommands", False),
        )
        pool_recorder = PoolRecorder(observe)
        kwargs = {"serverSelectionTimeoutMS": 5000, "socketTimeoutMS": 30000}
        if "serverApi" in spec:
            api = spec.pop("serverApi")
            kwargs["server_api"] = ServerApi(
                api["version"], strict=api.get("strict"),
                deprecation_errors=api.get("deprecationErrors"),
            )
        if spec:
            raise RunnerError(f"client options {sorted(spec)} not supported")
        kwargs.update(uri_options)
        client = pymongo.MongoClient(self.uri, event_listeners=[recorder, pool_recorder], **kwargs)
        self.add(name, client)
        self.recorders[name] = recorder
        self.pool_recorders[name] = pool_recorder

    def _create_database(self, spec):
        name = spec.pop("id")
        client = self.client_of(spec.pop("client"))
        db_name = spec.pop("databaseName")
        kwargs = common_options(spec.pop("databaseOptions", None), "databaseOptions")
        if spec:
            raise RunnerError(f"database options {sorted(spec)} not supported")
        self.add(name, client.get_database(db_name, **kwargs))

    def _create_collection(self, spec):
        name = spec.pop("id")
        db = self.get(spec.pop("database"), Database)
        coll_name = spec.pop("collectionName")
        kwargs = common_options(spec.pop("collectionOptions", None), "collectionOptions")
        if spec:
            raise RunnerError(f"collection options {sorted(spec)} not supported")
        self.add(name, db.get_collection(coll_name, **kwargs))

    def _create_session(self, spec):
        name = spec.pop("id")
        client = self.client_of(spec.pop("client"))
        options = dict(spec.pop("sessionOptions", {}))
        if spec:
            raise RunnerError(f"session options {sorted(spec)} not supported")
        kwargs = {}
        if "causalConsistency" in options:
            kwargs["causal_consistency"] = options.pop("causalConsistency")
        if "snapshot" in options:
            kwargs["snapshot"] = options.pop("snapshot")
        if "defaultTransactionOptions" in options:
            kwargs["default_transaction_options"] = transaction_options(
                options.pop("defaultTransactionOptions"))
        if options:
            raise RunnerError(f"sessionOptions {sorted(options)} not supported")
        session = client.start_session(**kwargs)
        self.add(name, session)
        self.sessions_lsid[name] = session.session_id

    def _create_bucket(self, spec):
        name = spec.pop("id")
        db = self.get(spec.pop("database"), Database)
        options = dict(spec.pop("bucketOptions", {}))
        if spec:
            raise RunnerError(f"bucket options {sorted(spec)} not supported")
        kwargs = {}
        for key, kwarg in (("bucketName", "bucket_name"), ("chunkSizeBytes", "chunk_size_bytes")):
            if key in options:
                kwargs[kwarg] = options.pop(key)
        if "writeConcern" in options:
            kwargs["write_concern"] = write_concern(options.pop("writeConcern"))
        if "readPreference" in options:
            kwargs["read_preference"] = read_preference(options.pop("readPreference"))
        if options:
            raise RunnerError(f"bucketOptions {sorted(options)} not supported")
        self.add(name, gridfs.GridFSBucket(db, **kwargs))

    def stop_observing(self):
        for recorder in [*self.recorders.values(), *self.pool_recorders.values()]:
            recorder.enabled = False

    def close(self):
        """Ends every session, then closes every client. Before closing, each client pings once
        so that its unacknowledged writes are applied before the next test sets up: the server
        answers a connection's requests in order, and the ping uses the last connection used."""
        for value in self._entities.values():
            if isinstance(value, (ChangeStream, CommandCursor)):
                try:
                    value.close()
                except pymongo.errors.PyMongoError:
                    pass
        for value in self._entities.values():
            if isinstance(value, pymongo.client_session.ClientSession):
                value.end_session()
        for value in self._entities.values():
            if isinstance(value, pymongo.MongoClient):
                try:
                    value.admin.command("ping")
                except pymongo.errors.PyMongoError:
                    pass
                value.close()
        self._entities.clear()

