"""pymongo connects with a Cosmos DB connection string, unchanged but for host and port, and
runs CRUD as the account's user; without credentials the same TLS endpoint refuses reads."""
import os

import pymongo
from pymongo.errors import OperationFailure

uri = os.environ["MAYFLY_URI"]
account = os.environ["MAYFLY_ACCOUNT"]

client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
try:
    status = client.admin.command("connectionStatus")
    users = status["authInfo"]["authenticatedUsers"]
    assert users == [{"user": account, "db": "admin"}], users
    assert {"role": "root", "db": "admin"} in status["authInfo"]["authenticatedUserRoles"], status

    items = client.cosmos_scenario.items
    items.drop()
    items.insert_many([{"_id": i, "name": f"item{i}", "qty": i * 10} for i in range(5)])
    assert items.count_documents({}) == 5
    assert items.find_one({"_id": 3})["name"] == "item3"
    assert items.update_one({"_id": 1}, {"$inc": {"qty": 5}}).modified_count == 1
    assert items.find_one({"_id": 1})["qty"] == 15
    assert items.delete_many({"qty": {"$gte": 30}}).deleted_count == 2
    assert sorted(d["_id"] for d in items.find()) == [0, 1, 2]
    items.drop()
finally:
    client.close()

anonymous = pymongo.MongoClient(os.environ["MAYFLY_ANONYMOUS_URI"], serverSelectionTimeoutMS=10000)
try:
    anonymous.admin.command("ping")
    try:
        anonymous.cosmos_scenario.items.find_one()
        raise AssertionError("a client without credentials could read")
    except OperationFailure as e:
        assert e.code == 13, e
finally:
    anonymous.close()
print("ok")
