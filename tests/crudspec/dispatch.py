"""Which operations an entity has: the table for its type (collection, database, client,
session, cursor, change stream, bucket), and the call of one operation with its arguments.

Not here: the operations themselves (operations.py, catalog.py, sessions.py, streams.py) or the
test runner's own operations (special.py).
"""
from gridfs import GridFSBucket
from pymongo import MongoClient
from pymongo.change_stream import ChangeStream
from pymongo.client_session import ClientSession
from pymongo.collection import Collection
from pymongo.database import Database

import catalog
import operations
import sessions
import streams
from entities import RunnerError

TABLES = [
    (Collection, {**operations.COLLECTION_OPERATIONS, **catalog.COLLECTION_CATALOG,
                  **streams.WATCH_OPERATIONS}),
    (Database, {**operations.DATABASE_OPERATIONS, **catalog.DATABASE_CATALOG,
                **streams.WATCH_OPERATIONS}),
    (MongoClient, {**operations.CLIENT_OPERATIONS, **catalog.CLIENT_CATALOG,
                   **streams.WATCH_OPERATIONS}),
    (ClientSession, sessions.SESSION_OPERATIONS),
    (operations.FindCursor, operations.CURSOR_OPERATIONS),
    (ChangeStream, streams.STREAM_OPERATIONS),
    (GridFSBucket, catalog.BUCKET_OPERATIONS),
]


def prepare(entities, operation, run_operations):
    """A callable that runs an entity operation and returns its operations.Result; raises
    RunnerError for an unknown entity, operation or argument. `run_operations` runs a nested
    list of operations (withTransaction's callback)."""
    target = entities.get(operation["object"])
    name = operation["name"]
    table = next((t for kind, t in TABLES if isinstance(target, kind)), {})
    if name not in table:
        raise RunnerError(f"operation {name} on {type(target).__name__} not supported")
    args = operations.Arguments(name, operation.get("arguments"), entities, run_operations)
    return lambda: table[name](target, args)
