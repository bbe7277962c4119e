"""The CRUD operations on collections, databases and clients, and on find cursors, mapped onto
pymongo, and their results in the shapes the CRUD specification defines.

Owns argument translation (every argument must be known for its operation, or the test fails
with a runner error), the call itself, and which results are root-level documents (cursors are
fully iterated). Not here: the shapes of write results (results.py), expectError/expectResult
assertions (scenario.py, expect_error.py), entity creation (entities.py), sessions and
transactions (sessions.py), change streams (streams.py), listing and renaming (catalog.py), or
which table an entity's operation is found in (dispatch.py).
"""
from bson.son import SON
from pymongo import operations as models
from pymongo import ReturnDocument
from pymongo.client_session import ClientSession

from entities import RunnerError, read_preference, write_concern
from results import bulk_result, client_bulk_result, write_result


class Arguments:
    """An operation's arguments; each must be taken exactly once, leftovers are an error."""

    def __init__(self, op_name, arguments, entities, run_operations=None):
        self.op_name = op_name
        self.entities = entities
        self.run_operations = run_operations  # runs a nested list of operations (callbacks)
        self._args = dict(arguments or {})
        self.kwargs = {}
        if "session" in self._args:
            self.kwargs["session"] = entities.get(self._args.pop("session"), ClientSession)

    def required(self, name):
        if name not in self._args:
            raise RunnerError(f"{self.op_name}: argument {name} is required")
        return self._args.pop(name)

    def optional(self, name, default=None):
        return self._args.pop(name, default)

    def has(self, name):
        return name in self._args

    def pass_through(self, **names):
        """Moves each present spec argument to pymongo's keyword of the given name (pymongo takes
        sorts, hints and key patterns as documents, in their order)."""
        for spec_name, kwarg in names.items():
            if spec_name in self._args:
                self.kwargs[kwarg] = self._args.pop(spec_name)
        return self

    def rest(self):
        """Takes every argument not yet taken (options passed on to the server as they are)."""
        rest, self._args = self._args, {}
        return rest

    def finish(self):
        if self._args:
            raise RunnerError(f"{self.op_name}: unsupported arguments {sorted(self._args)}")
        return self.kwargs


class Result:
    """An operation's outcome: the value to match (`value`), whether a document (or each
    document of a returned list) is a root-level document, the raw driver object, and what
    saveResultAsEntity saves (the value, unless the operation made an entity: a cursor or a
    change stream)."""

    def __init__(self, value, root=True, raw=None, entity=None):
        self.value = value
        self.root = root
        self.raw = raw if raw is not None else value
        self.entity = entity if entity is not None else value


class FindCursor:
    """A find cursor whose server-side cursor exists once created (createFindCursor): the first
    document is fetched at once and handed out by the first iteration."""

    def __init__(self, cursor):
        self.cursor = cursor
        self.first = next(cursor, None)
        self.started = False

    def next_document(self):
        if not self.started:
            self.started = True
            if self.first is not None:
                return self.first
        return next(self.cursor)

    def close(self):
        self.cursor.close()


WRITE_MODELS = {
    "insertOne": (models.InsertOne, {"document": "document"}),
    "updateOne": (models.UpdateOne, {
        "filter": "filter", "update": "update", "upsert": "upsert", "collation": "collation",
        "arrayFilters": "array_filters", "hint": "hint", "sort": "sort"}),
    "updateMany": (models.UpdateMany, {
        "filter": "filter", "update": "update", "upsert": "upsert", "collation": "collation",
        "arrayFilters": "array_filters", "hint": "hint"}),
    "replaceOne": (models.ReplaceOne, {
        "filter": "filter", "replacement": "replacement", "upsert": "upsert",
        "collation": "collation", "hint": "hint", "sort": "sort"}),
    "deleteOne": (models.DeleteOne, {"filter": "filter", "collation": "collation", "hint": "hint"}),
    "deleteMany": (models.DeleteMany, {"filter": "filter", "collation": "collation", "hint": "hint"}),
}


def write_model(request, entities):
    if len(request) != 1:
        raise RunnerError(f"a write model has exactly one key: {sorted(request)}")
    (kind, spec), = request.items()
    if kind not in WRITE_MODELS:
        raise RunnerError(f"bulkWrite model {kind} not supported")
    cls, names = WRITE_MODELS[kind]
    return cls(**Arguments(kind, spec, entities).pass_through(**names).finish())


CLIENT_WRITE_MODELS = {
    kind: (cls, dict(names, namespace="namespace")) for kind, (cls, names) in WRITE_MODELS.items()
}


def client_write_model(request, entities):
    """A clientBulkWrite model: a collection write model with the namespace it writes to."""
    if len(request) != 1:
        raise RunnerError(f"a write model has exactly one key: {sorted(request)}")
    (kind, spec), = request.items()
    if kind not in CLIENT_WRITE_MODELS:
        raise RunnerError(f"clientBulkWrite model {kind} not supported")
    cls, names = CLIENT_WRITE_MODELS[kind]
    return cls(**Arguments(kind, spec, entities).pass_through(**names).finish())


FIND_OPTIONS = dict(
    filter="filter", sort="sort", projection="projection", skip="skip", limit="limit",
    batchSize="batch_size", collation="collation", comment="comment", hint="hint",
    allowDiskUse="allow_disk_use", let="let", max="max", min="min", maxTimeMS="max_time_ms",
    returnKey="return_key", showRecordId="show_record_id", noCursorTimeout="no_cursor_timeout",
    allowPartialResults="allow_partial_results",
)
AGGREGATE_OPTIONS = dict(
    allowDiskUse="allowDiskUse", batchSize="batchSize", collation="collation", comment="comment",
    hint="hint", let="let", maxTimeMS="maxTimeMS", bypassDocumentValidation="bypassDocumentValidation",
)
UPDATE_OPTIONS = dict(
    upsert="upsert", bypassDocumentValidation="bypass_document_validation",
    collation="collation", hint="hint", let="let", comment="comment",
)
FIND_AND_MODIFY_OPTIONS = dict(
    projection="projection", sort="sort", collation="collation", hint="hint", let="let",
    comment="comment", maxTimeMS="maxTimeMS",
)


def return_document(value):
    if not isinstance(value, str) or value.lower() not in ("before", "after"):
        raise RunnerError(f"returnDocument must be Before or After, not {value!r}")
    return ReturnDocument.AFTER if value.lower() == "after" else ReturnDocument.BEFORE


# Collection operations: name -> function(collection, Arguments) -> Result.

def c_aggregate(coll, a):
    pipeline = a.required("pipeline")
    return Result(list(coll.aggregate(pipeline, **a.pass_through(**AGGREGATE_OPTIONS).finish())))


def c_bulk_write(coll, a):
    requests = [write_model(r, a.entities) for r in a.required("requests")]
    kwargs = a.pass_through(ordered="ordered", bypassDocumentValidation="bypass_document_validation",
                            comment="comment", let="let").finish()
    result = coll.bulk_write(requests, **kwargs)
    return Result(bulk_result(result), raw=result)


def c_count(coll, a):
    """The deprecated `count` helper, which drivers implement as the `count` command."""
    command = SON([("count", coll.name), ("query", a.required("filter"))])
    for name in ("skip", "limit", "collation", "hint", "maxTimeMS"):
        if a.has(name):
            command[name] = a.optional(name)
    if a.has("comment"):
        command["comment"] = a.optional("comment")
    if coll.read_concern.document:
        command["readConcern"] = coll.read_concern.document
    kwargs = a.finish()
    reply = coll.database.command(
        command, read_preference=coll.read_preference, session=kwargs.get("session")
    )
    return Result(int(reply["n"]))


def c_count_documents(coll, a):
    filter_ = a.required("filter")
    kwargs = a.pass_through(skip="skip", limit="limit", collation="collation", hint="hint",
                            comment="comment", maxTimeMS="maxTimeMS").finish()
    return Result(coll.count_documents(filter_, **kwargs))


def c_estimated_document_count(coll, a):
    kwargs = a.pass_through(comment="comment", maxTimeMS="maxTimeMS").finish()
    return Result(coll.estimated_document_count(**kwargs))


def c_delete(method):
    def run(coll, a):
        filter_ = a.required("filter")
        kwargs = a.pass_through(collation="collation", hint="hint", let="let",
                                comment="comment").finish()
        result = getattr(coll, method)(filter_, **kwargs)
        return Result(write_result(result), raw=result)
    return run


def c_distinct(coll, a):
    key = a.required("fieldName")
    filter_ = a.required("filter")
    kwargs = a.pass_through(collation="collation", hint="hint", comment="comment",
                            maxTimeMS="maxTimeMS").finish()
    return Result(coll.distinct(key, filter_, **kwargs), root=False)


def c_find(coll, a):
    return Result(list(coll.find(**a.pass_through(**FIND_OPTIONS).finish())))


def c_create_find_cursor(coll, a):
    return Result(None, entity=FindCursor(coll.find(**a.pass_through(**FIND_OPTIONS).finish())))


def c_find_one(coll, a):
    options = {k: v for k, v in FIND_OPTIONS.items() if k not in ("limit", "batchSize")}
    return Result(coll.find_one(**a.pass_through(**options).finish()))


def c_find_one_and_delete(coll, a):
    filter_ = a.required("filter")
    kwargs = a.pass_through(**FIND_AND_MODIFY_OPTIONS).finish()
    return Result(coll.find_one_and_delete(filter_, **kwargs))


def c_find_one_and_replace(coll, a):
    filter_, replacement = a.required("filter"), a.required("replacement")
    if a.has("returnDocument"):
        a.kwargs["return_document"] = return_document(a.optional("returnDocument"))
    kwargs = a.pass_through(upsert="upsert", bypassDocumentValidation="bypassDocumentValidation",
                            **FIND_AND_MODIFY_OPTIONS).finish()
    return Result(coll.find_one_and_replace(filter_, replacement, **kwargs))


def c_find_one_and_update(coll, a):
    filter_, update = a.required("filter"), a.required("update")
    if a.has("returnDocument"):
        a.kwargs["return_document"] = return_document(a.optional("returnDocument"))
    kwargs = a.pass_through(upsert="upsert", arrayFilters="array_filters",
                            bypassDocumentValidation="bypassDocumentValidation",
                            **FIND_AND_MODIFY_OPTIONS).finish()
    return Result(coll.find_one_and_update(filter_, update, **kwargs))


def c_insert_many(coll, a):
    documents = a.required("documents")
    kwargs = a.pass_through(ordered="ordered", bypassDocumentValidation="bypass_document_validation",
                            comment="comment").finish()
    result = coll.insert_many(documents, **kwargs)
    return Result(write_result(result), raw=result)


def c_insert_one(coll, a):
    document = a.required("document")
    kwargs = a.pass_through(bypassDocumentValidation="bypass_document_validation",
                            comment="comment").finish()
    result = coll.insert_one(document, **kwargs)
    return Result(write_result(result), raw=result)


def c_update(method, second, extra):
    def run(coll, a):
        filter_, change = a.required("filter"), a.required(second)
        kwargs = a.pass_through(**UPDATE_OPTIONS, **extra).finish()
        result = getattr(coll, method)(filter_, change, **kwargs)
        return Result(write_result(result), raw=result)
    return run


def c_create_index(coll, a):
    keys = a.required("keys")
    kwargs = a.pass_through(name="name", unique="unique", sparse="sparse",
                            expireAfterSeconds="expireAfterSeconds").finish()
    return Result(coll.create_index(keys, **kwargs))


def c_drop(coll, a):
    coll.drop(**a.pass_through(comment="comment").finish())
    return Result(None)


def c_list_indexes(coll, a):
    return Result(list(coll.list_indexes(**a.finish())))


COLLECTION_OPERATIONS = {
    "aggregate": c_aggregate,
    "bulkWrite": c_bulk_write,
    "count": c_count,
    "countDocuments": c_count_documents,
    "createFindCursor": c_create_find_cursor,
    "createIndex": c_create_index,
    "deleteMany": c_delete("delete_many"),
    "deleteOne": c_delete("delete_one"),
    "distinct": c_distinct,
    "drop": c_drop,
    "estimatedDocumentCount": c_estimated_document_count,
    "find": c_find,
    "findOne": c_find_one,
    "findOneAndDelete": c_find_one_and_delete,
    "findOneAndReplace": c_find_one_and_replace,
    "findOneAndUpdate": c_find_one_and_update,
    "insertMany": c_insert_many,
    "insertOne": c_insert_one,
    "listIndexes": c_list_indexes,
    "replaceOne": c_update("replace_one", "replacement", {"sort": "sort"}),
    "updateMany": c_update("update_many", "update", {"arrayFilters": "array_filters"}),
    "updateOne": c_update("update_one", "update", {"arrayFilters": "array_filters", "sort": "sort"}),
}


# Database operations.

def d_aggregate(db, a):
    pipeline = a.required("pipeline")
    return Result(list(db.aggregate(pipeline, **a.pass_through(**AGGREGATE_OPTIONS).finish())))


def d_create_collection(db, a):
    name = a.required("collection")
    options = a.rest()
    kwargs = a.finish()
    db.create_collection(name, check_exists=False, **kwargs, **options)
    return Result(None)


def d_drop_collection(db, a):
    name = a.required("collection")
    db.drop_collection(name, **a.finish())
    return Result(None)


def d_modify_collection(db, a):
    command = SON([("collMod", a.required("collection"))])
    for name in ("validator", "validationLevel", "validationAction", "index",
                 "changeStreamPreAndPostImages", "expireAfterSeconds", "timeseries"):
        if a.has(name):
            command[name] = a.optional(name)
    db.command(command, **a.finish())
    return Result(None)


def d_run_command(db, a):
    command = a.required("command")
    a.required("commandName")
    if a.has("readPreference"):
        a.kwargs["read_preference"] = read_preference(a.optional("readPreference"))
    return Result(db.command(command, **a.finish()))


DATABASE_OPERATIONS = {
    "aggregate": d_aggregate,
    "createCollection": d_create_collection,
    "dropCollection": d_drop_collection,
    "modifyCollection": d_modify_collection,
    "runCommand": d_run_command,
}


# Client operations.

def m_client_bulk_write(client, a):
    models = [client_write_model(r, a.entities) for r in a.required("models")]
    if a.has("writeConcern"):
        a.kwargs["write_concern"] = write_concern(a.optional("writeConcern"))
    kwargs = a.pass_through(ordered="ordered", verboseResults="verbose_results",
                            bypassDocumentValidation="bypass_document_validation",
                            comment="comment", let="let").finish()
    result = client.bulk_write(models, **kwargs)
    return Result(client_bulk_result(result), raw=result)


CLIENT_OPERATIONS = {"clientBulkWrite": m_client_bulk_write}


# Cursor operations.

def cursor_iterate(cursor, a):
    a.finish()
    return Result(cursor.next_document())


def cursor_close(cursor, a):
    a.finish()
    try:  # errors of killCursors are not reported (unified test format, "close")
        cursor.close()
    except Exception:
        pass
    return Result(None)


CURSOR_OPERATIONS = {
    "iterateUntilDocumentOrError": cursor_iterate,
    "iterateOnce": cursor_iterate,
    "close": cursor_close,
}
