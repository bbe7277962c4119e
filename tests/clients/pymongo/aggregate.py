"""pymongo and the aggregation pipeline: $facet with $bucket and $bucketAuto, and $expr with a
let variable in find."""
import os

import pymongo

uri = os.environ["MAYFLY_URI"]
client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
try:
    coll = client.pymongo_aggregate.artwork
    coll.drop()
    coll.insert_many(
        [
            {"_id": 1, "title": "The Pillars of Society", "year": 1926, "price": 199.99},
            {"_id": 2, "title": "Melancholy III", "year": 1902, "price": 280.00},
            {"_id": 3, "title": "Dancer", "year": 1925, "price": 76.04},
            {"_id": 4, "title": "The Great Wave", "year": 1831, "price": 167.30},
            {"_id": 5, "title": "The Persistence of Memory", "year": 1931, "price": 483.00},
            {"_id": 6, "title": "Composition VII", "year": 1913, "price": 385.00},
            {"_id": 7, "title": "The Scream", "year": 1893},
            {"_id": 8, "title": "Blue Flower", "year": 1918, "price": 118.42},
        ]
    )
    [out] = coll.aggregate(
        [
            {
                "$facet": {
                    "byPrice": [
                        {
                            "$bucket": {
                                "groupBy": "$price",
                                "boundaries": [0, 150, 200, 300, 400],
                                "default": "Other",
                                "output": {"count": {"$sum": 1}, "titles": {"$push": "$title"}},
                            }
                        }
                    ],
                    "byYear": [{"$bucketAuto": {"groupBy": "$year", "buckets": 4}}],
                    "total": [{"$count": "n"}],
                }
            }
        ]
    )
    by_price = {b["_id"]: b["count"] for b in out["byPrice"]}
    assert by_price == {0: 2, 150: 2, 200: 1, 300: 1, "Other": 2}, out["byPrice"]
    assert [b["count"] for b in out["byYear"]] == [2, 2, 2, 2], out["byYear"]
    assert out["byYear"][0]["_id"] == {"min": 1831, "max": 1902}, out["byYear"]
    assert out["total"] == [{"n": 8}], out["total"]

    cheap = coll.find(
        {"$expr": {"$lt": ["$price", "$$limit"]}}, let={"limit": 150}
    ).sort("_id")
    # In expressions a missing field sorts below every number, so "The Scream" (no price) is
    # cheaper than 150 too, as on mongod.
    assert [d["_id"] for d in cheap] == [3, 7, 8], "find with $expr and let"
    client.drop_database("pymongo_aggregate")
finally:
    client.close()
print("ok")
