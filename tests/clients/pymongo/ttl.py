"""TTL through pymongo: the _ts TTL index, per-document ttl types, exact expiry via the test
commands (the runner starts the server with a manual clock), and the refused values."""
import os

import pymongo
from bson import Decimal128, Int64
from pymongo.errors import OperationFailure

client = pymongo.MongoClient(os.environ["MAYFLY_URI"], serverSelectionTimeoutMS=5000)
admin = client.admin
coll = client.ttl_pymongo.items
coll.drop()
admin.command("reaper", "pause")
# Scenarios share one server: start from an empty backlog.
admin.command("reaper", "runOnce")


def advance(seconds):
    return admin.command("advanceClock", seconds)["now"]


coll.create_index([("_ts", 1)], expireAfterSeconds=10)
info = coll.index_information()["_ts_1"]
assert info["expireAfterSeconds"] == 10 and isinstance(info["expireAfterSeconds"], int), info

coll.insert_many([
    {"_id": "int", "ttl": 20},
    {"_id": "long", "ttl": Int64(20)},
    {"_id": "double", "ttl": 20.0},
    {"_id": "fraction", "ttl": 20.5},
    {"_id": "never", "ttl": -1},
    {"_id": "string", "ttl": "20"},
    {"_id": "plain"},
])
advance(9)
assert coll.count_documents({}) == 7
advance(1)
assert sorted(d["_id"] for d in coll.find()) == ["double", "int", "long", "never"]
advance(10)
assert [d["_id"] for d in coll.find()] == ["never"]
assert coll.find_one({"_id": "never"}) == {"_id": "never", "ttl": -1}
assert admin.command("reaper", "runOnce")["reaped"] == 6

# expireAfterSeconds accepted as every numeric type, refused otherwise (TTL-2, TTL-3, TTL-4).
for i, value in enumerate([10, Int64(10), 10.0, Decimal128("10")]):
    client.ttl_pymongo.command({"createIndexes": f"ok{i}", "indexes": [
        {"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": value}]})
for value in [0, -2, 10.5, "10", Int64(2147483648)]:
    try:
        client.ttl_pymongo.command({"createIndexes": "bad", "indexes": [
            {"key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": value}]})
        raise AssertionError(f"{value!r} was accepted")
    except OperationFailure as e:
        assert e.code == 67, (value, e)
# MongoDB's own model beside Cosmos's: a TTL index on a date field (TTL-25); compound keys are
# refused as mongod refuses them.
coll.create_index([("createdAt", 1)], expireAfterSeconds=10)
assert coll.index_information()["createdAt_1"]["expireAfterSeconds"] == 10
try:
    coll.create_index([("createdAt", 1), ("n", 1)], expireAfterSeconds=10)
    raise AssertionError("a compound TTL index was accepted")
except OperationFailure as e:
    assert e.code == 67, e
admin.command("reaper", "resume")
print("ok")
