"""Listing databases, collections and indexes (the names-only and the document forms), renaming
a collection, dropping an index, mapReduce, and GridFS downloads: the read operations the
retryable-reads and change-streams files use beyond CRUD.

The spec's *Objects and *Names forms run the same command as the document form; pymongo has one
method per form where it has them, and the rest are derived from the document form (the command
sent, which is what the tests observe, is the same). mapReduce has no pymongo method: it runs as
the command a driver sends. Not here: CRUD (operations.py).
"""
from bson.son import SON

from operations import Result


def m_list_databases(client, a):
    kwargs = a.pass_through(filter="filter", nameOnly="nameOnly",
                            authorizedDatabases="authorizedDatabases").finish()
    return Result(list(client.list_databases(**kwargs)))


def m_list_database_names(client, a):
    return Result(client.list_database_names(**a.finish()), root=False)


def d_list_collections(db, a):
    if a.has("batchSize"):
        a.kwargs["cursor"] = {"batchSize": a.optional("batchSize")}
    kwargs = a.pass_through(filter="filter").finish()
    return Result(list(db.list_collections(**kwargs)))


def d_list_collection_names(db, a):
    return Result(db.list_collection_names(**a.pass_through(filter="filter").finish()), root=False)


def c_list_index_names(coll, a):
    return Result([index["name"] for index in coll.list_indexes(**a.finish())], root=False)


def c_rename(coll, a):
    to = a.required("to")
    kwargs = a.pass_through(dropTarget="dropTarget").finish()
    coll.rename(to, **kwargs)
    return Result(None)


def c_drop_index(coll, a):
    name = a.required("name")
    coll.drop_index(name, **a.finish())
    return Result(None)


def c_map_reduce(coll, a):
    command = SON([("mapReduce", coll.name), ("map", a.required("map")),
                   ("reduce", a.required("reduce")), ("out", a.required("out"))])
    kwargs = a.finish()
    reply = coll.database.command(command, read_preference=coll.read_preference, **kwargs)
    return Result(reply.get("results"))


def b_download(bucket, a):
    file_id = a.required("id")
    with bucket.open_download_stream(file_id, **a.finish()) as stream:
        return Result(stream.read(), root=False)


def b_download_by_name(bucket, a):
    name = a.required("filename")
    kwargs = a.pass_through(revision="revision").finish()
    with bucket.open_download_stream_by_name(name, **kwargs) as stream:
        return Result(stream.read(), root=False)


CLIENT_CATALOG = {
    "listDatabases": m_list_databases,
    "listDatabaseNames": m_list_database_names,
    "listDatabaseObjects": m_list_databases,
}

DATABASE_CATALOG = {
    "listCollections": d_list_collections,
    "listCollectionNames": d_list_collection_names,
    "listCollectionObjects": d_list_collections,
}

COLLECTION_CATALOG = {
    "dropIndex": c_drop_index,
    "listIndexNames": c_list_index_names,
    "mapReduce": c_map_reduce,
    "rename": c_rename,
}

BUCKET_OPERATIONS = {
    "download": b_download,
    "downloadByName": b_download_by_name,
}
