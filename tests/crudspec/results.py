"""Write results as the CRUD specification's documents: InsertOneResult, InsertManyResult,
UpdateResult, DeleteResult, BulkWriteResult (also the partial one a BulkWriteError carries) and
the client bulk write's result. An unacknowledged write's result is `{acknowledged: false}`.
Not here: calling the driver (operations.py).
"""
from pymongo.results import BulkWriteResult

from entities import RunnerError


def write_result(result):
    """An InsertOne/Update/Delete result as the CRUD spec's document."""
    if not result.acknowledged:
        return {"acknowledged": False}
    name = type(result).__name__
    if name == "InsertOneResult":
        return {"insertedId": result.inserted_id}
    if name == "InsertManyResult":
        return {"insertedIds": {str(i): v for i, v in enumerate(result.inserted_ids)}}
    if name == "DeleteResult":
        return {"deletedCount": result.deleted_count}
    if name == "UpdateResult":
        value = {
            "matchedCount": result.matched_count,
            "modifiedCount": result.modified_count,
            "upsertedCount": 0 if result.upserted_id is None else 1,
        }
        if result.upserted_id is not None:
            value["upsertedId"] = result.upserted_id
        return value
    if name == "BulkWriteResult":
        return bulk_result(result)
    raise RunnerError(f"no CRUD shape for {name}")


def bulk_result(result):
    """A BulkWriteResult as the CRUD spec's document. pymongo reports no insertedIds for bulk
    writes, which the spec allows (tests match them with $$unsetOrMatches)."""
    if not result.acknowledged:
        return {"acknowledged": False}
    return {
        "deletedCount": result.deleted_count,
        "insertedCount": result.inserted_count,
        "matchedCount": result.matched_count,
        "modifiedCount": result.modified_count,
        "upsertedCount": result.upserted_count,
        "upsertedIds": {str(i): v for i, v in result.upserted_ids.items()},
    }


def bulk_error_result(error):
    """The partial result a BulkWriteError carries, in the same shape."""
    return bulk_result(BulkWriteResult(error.details, True))


def client_bulk_result(result):
    """A ClientBulkWriteResult as the CRUD spec's document (verbose results when asked for)."""
    if not result.acknowledged:
        return {"acknowledged": False}
    inserts, updates, deletes = {}, {}, {}
    if result.has_verbose_results:
        for i, r in result.insert_results.items():
            inserts[str(i)] = {"insertedId": r.inserted_id}
        for i, r in result.update_results.items():
            updates[str(i)] = {"matchedCount": r.matched_count, "modifiedCount": r.modified_count}
            if r.upserted_id is not None:
                updates[str(i)]["upsertedId"] = r.upserted_id
        for i, r in result.delete_results.items():
            deletes[str(i)] = {"deletedCount": r.deleted_count}
    return {
        "deletedCount": result.deleted_count,
        "insertedCount": result.inserted_count,
        "matchedCount": result.matched_count,
        "modifiedCount": result.modified_count,
        "upsertedCount": result.upserted_count,
        "insertResults": inserts,
        "updateResults": updates,
        "deleteResults": deletes,
    }
