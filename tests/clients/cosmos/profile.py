"""pymongo against `--compat cosmos`, with the portal's full connection string: what fails on
Azure fails here, with Cosmos's codes and texts.

- a sort on a field without an index fails with Cosmos's message; creating the index makes it
  pass;
- a 3 MB document is refused (2 MB limit);
- a TTL index on a date field (MongoDB's idiom: Mongoose `expires`, `expireAfterSeconds` on
  `createdAt`) is refused with Cosmos's code and text (TTL-4), a `_ts` TTL index is not;
- a burst over `--cosmos-throughput` gets 16500, and the request succeeds after waiting the
  `RetryAfterMs` the error names;
- `getLastRequestStatistics` after a point read of a 1 KB document reports about 1 RU.

The server runs with `--cosmos-throughput` (MAYFLY_THROUGHPUT RU/s per collection).
"""
import os
import re
import time

import pymongo
from pymongo.errors import OperationFailure

uri = os.environ["MAYFLY_URI"]
throughput = int(os.environ["MAYFLY_THROUGHPUT"])
RULE_LINE = "[mayfly --compat cosmos: rule {0}; --cosmos-allow {0} turns it off]"

# One connection, so that getLastRequestStatistics reports on the connection that ran the read.
client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000, maxPoolSize=1)


def settle():
    """Lets the collection's budget refill (a second holds it all)."""
    time.sleep(1.1)


try:
    db = client.cosmos_profile
    db.items.drop()
    settle()
    db.items.insert_many([{"_id": i, "rank": 10 - i, "body": "x" * 1000} for i in range(10)])
    settle()

    # Sort needs an index.
    try:
        list(db.items.find().sort("rank", 1))
        raise AssertionError("a sort without an index ran")
    except OperationFailure as e:
        assert e.code == 2, e.details
        message = e.details["errmsg"]
        assert message.startswith("Error=2, Details='Response status code does not indicate success: BadRequest (400); Substatus: 0; ActivityId: "), message
        assert '{"Errors":["The index path corresponding to the specified order-by item is excluded."]}' in message, message
        assert message.endswith(RULE_LINE.format("sort-without-index")), message
    db.items.create_index("rank")
    settle()
    assert [d["_id"] for d in db.items.find({}, {"_id": 1}).sort("rank", 1).limit(3)] == [9, 8, 7]
    settle()

    # 2 MB documents.
    try:
        db.items.insert_one({"_id": "big", "blob": "x" * (3 * 1024 * 1024)})
        raise AssertionError("a 3 MB document was stored")
    except OperationFailure as e:
        assert e.code == 16, e.details
        assert e.details["errmsg"].startswith("Error=16, Details='Response status code does not indicate success: RequestEntityTooLarge (413)"), e.details
    settle()

    # TTL on a date field is MongoDB's model, not Cosmos's (TTL-4).
    try:
        db.items.create_index("createdAt", expireAfterSeconds=3600)
        raise AssertionError("a TTL index on a date field was created in the Cosmos profile")
    except OperationFailure as e:
        assert e.code == 2, e.details
        assert "The 'expireAfterSeconds' option is supported on '_ts' field only." in e.details["errmsg"], e.details
    settle()
    assert "createdAt_1" not in db.items.index_information()
    db.items.create_index("_ts", expireAfterSeconds=3600)
    settle()

    # A customAction failure is an OperationFailure, not a KeyError: the reply carries
    # MongoDB's `errmsg` beside Cosmos's `errMsg`.
    try:
        db.command({"customAction": "GetCollection", "collection": "missing"})
        raise AssertionError("GetCollection of a missing collection succeeded")
    except OperationFailure as e:
        assert e.code == 26, e.details
        assert e.details["errmsg"] == e.details["errMsg"], e.details
    settle()

    # About 1 RU for a point read of 1 KB.
    assert db.items.find_one({"_id": 3})["rank"] == 7
    stats = db.command("getLastRequestStatistics")
    assert stats["_t"] == "GetRequestStatisticsResponse", stats
    assert stats["CommandName"] == "find", stats
    assert 0.9 <= stats["RequestCharge"] <= 1.5, stats
    settle()

    # A burst over the budget: 16500 with RetryAfterMs, then success after waiting it.
    burst = db.burst
    refused = None
    for i in range(throughput):
        try:
            burst.insert_one({"_id": i})
        except OperationFailure as e:
            refused = (i, e)
            break
    assert refused is not None, "a burst over the budget was not throttled"
    i, e = refused
    assert e.code == 16500, e.details
    assert e.details["codeName"] == "RequestRateTooLarge", e.details
    match = re.match(r"Error=16500, RetryAfterMs=(\d+), Details='", e.details["errmsg"])
    assert match, e.details["errmsg"]
    time.sleep(int(match.group(1)) / 1000)
    burst.insert_one({"_id": i})
    settle()
    assert burst.count_documents({}) == i + 1
finally:
    client.close()
print("ok")
