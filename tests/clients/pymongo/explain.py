"""pymongo and the planner: Cursor.explain() shows the index scan, and max_time_ms stops a real
collection scan with ExecutionTimeout (50 MaxTimeMSExpired)."""
import os

import pymongo
from pymongo.errors import ExecutionTimeout

uri = os.environ["MAYFLY_URI"]
client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000)
try:
    coll = client.pymongo_explain.c
    coll.drop()
    coll.create_index("field")
    coll.insert_many([{"_id": i, "field": i % 20} for i in range(200)])
    plan = coll.find({"field": 7}).explain()["queryPlanner"]["winningPlan"]
    assert plan["stage"] == "FETCH", plan
    assert plan["inputStage"]["stage"] == "IXSCAN", plan
    assert plan["inputStage"]["indexName"] == "field_1", plan

    # A regex that matches nothing examines every document: tens of ms in a debug build, well
    # past 1 ms.
    big = client.pymongo_explain.big
    big.drop()
    big.insert_many([{"_id": i, "s": f"s{i}"} for i in range(50_000)])
    try:
        list(big.find({"s": {"$regex": "zzz$"}}, max_time_ms=1))
        raise AssertionError("max_time_ms=1 did not stop the scan")
    except ExecutionTimeout as e:
        assert e.code == 50, e
    client.drop_database("pymongo_explain")
finally:
    client.close()
print("ok")
