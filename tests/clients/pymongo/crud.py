"""CRUD through pymongo: inserts, reads, updates, replaces, deletes, counts, distinct, collection
and database listing, collStats, drop, cursors over getMore, and 200,000 documents inserted with
insert_many and read back with one full find."""
import os

import pymongo
from bson import ObjectId
from pymongo.errors import DuplicateKeyError

client = pymongo.MongoClient(os.environ["MAYFLY_URI"], serverSelectionTimeoutMS=5000)
client.drop_database("pymongo_crud")
db = client.pymongo_crud
c = db.people

# insert_one / insert_many
assert c.insert_one({"_id": 1, "name": "ada", "age": 36, "tags": ["math", "engines"]}).inserted_id == 1
res = c.insert_many(
    [
        {"_id": 2, "name": "grace", "age": 85, "tags": ["navy", "cobol"]},
        {"_id": 3, "name": "alan", "age": 41, "tags": ["math"]},
        {"_id": 4, "name": "edsger", "age": 72, "tags": ["math", "structured"]},
        {"name": "no-id", "age": 1},
    ]
)
assert res.inserted_ids[:3] == [2, 3, 4] and isinstance(res.inserted_ids[3], ObjectId), res.inserted_ids
try:
    c.insert_one({"_id": 1})
    raise AssertionError("duplicate _id accepted")
except DuplicateKeyError as e:
    assert e.code == 11000

# find / find_one
assert c.find_one({"_id": 2}, {"_id": 0, "name": 1}) == {"name": "grace"}
assert [d["_id"] for d in c.find({"tags": "math"}).sort("_id", 1)] == [1, 3, 4]
assert [d["name"] for d in c.find({"age": {"$gt": 40}}).sort("age", -1).limit(2)] == ["grace", "edsger"]
assert [d["_id"] for d in c.find().sort("_id", 1).skip(1).limit(1)] == [2]
assert c.find_one({"_id": 999}) is None

# count_documents / estimated_document_count / distinct
assert c.count_documents({}) == 5
assert c.count_documents({"age": {"$gte": 41}}) == 3
assert c.estimated_document_count() == 5
assert sorted(c.distinct("tags")) == ["cobol", "engines", "math", "navy", "structured"]
assert sorted(c.distinct("name", {"age": {"$lt": 50}})) == ["ada", "alan", "no-id"]

# update_one / update_many / replace_one
r = c.update_one({"_id": 1}, {"$inc": {"age": 1}, "$push": {"tags": "poetry"}})
assert (r.matched_count, r.modified_count) == (1, 1), r.raw_result
assert c.find_one({"_id": 1})["age"] == 37
assert c.find_one({"_id": 1})["tags"] == ["math", "engines", "poetry"]
r = c.update_many({"tags": "math"}, {"$set": {"mathematician": True}})
assert (r.matched_count, r.modified_count) == (3, 3), r.raw_result
assert c.count_documents({"mathematician": True}) == 3
r = c.update_one({"_id": "new"}, {"$set": {"name": "upserted"}}, upsert=True)
assert r.upserted_id == "new" and r.matched_count == 0, r.raw_result
r = c.update_one({"_id": 999}, {"$set": {"x": 1}})
assert (r.matched_count, r.modified_count) == (0, 0)
r = c.replace_one({"_id": 3}, {"name": "turing", "age": 41})
assert (r.matched_count, r.modified_count) == (1, 1), r.raw_result
assert c.find_one({"_id": 3}) == {"_id": 3, "name": "turing", "age": 41}

# delete_one / delete_many
assert c.delete_one({"_id": "new"}).deleted_count == 1
assert c.delete_many({"age": {"$lt": 40}}).deleted_count == 2
assert c.count_documents({}) == 3

# collections, databases, stats, drop
db.other.insert_one({"x": 1})
assert sorted(db.list_collection_names()) == ["other", "people"]
assert "pymongo_crud" in client.list_database_names()
assert any(d["name"] == "pymongo_crud" for d in client.list_databases())
stats = db.command("collStats", "people")
assert stats["ok"] == 1 and stats["count"] == 3 and stats["ns"] == "pymongo_crud.people", stats
c.drop()
assert db.list_collection_names() == ["other"]
assert c.find_one() is None

# cursors: 500 documents through getMore
big = db.cursor_docs
big.insert_many([{"_id": i, "sq": i * i} for i in range(500)])
docs = list(big.find().sort("_id", 1))
assert [d["_id"] for d in docs] == list(range(500))
assert all(d["sq"] == d["_id"] ** 2 for d in docs)
cur = big.find().sort("_id", 1).batch_size(7)
for i in range(150):
    assert next(cur)["_id"] == i
cur.close()

# 200,000 small documents, one insert_many, one full find
N = 200_000
bulk = db.bulk
res = bulk.insert_many(({"_id": i, "v": i % 1000} for i in range(N)), ordered=False)
assert len(res.inserted_ids) == N
seen = 0
total = 0
for d in bulk.find({}, batch_size=10_000):
    seen += 1
    total += d["v"]
assert seen == N, seen
assert total == sum(i % 1000 for i in range(N))
assert bulk.count_documents({}) == N
assert bulk.count_documents({"v": 999}) == N // 1000

client.drop_database("pymongo_crud")
client.close()
print("ok")
