"""pymongo with a Cosmos DB connection string pasted unchanged but for host and port, against a
plain `--compat cosmos` start: it connects over TLS (the CA trusted through the string's
tlsCAFile or, when MAYFLY_CA_OPTION names it, the driver's tlsCAFile option) and writes. The
emulator's string has no retrywrites=false: its first write gets Cosmos's refusal, as on an
account without EnableMongoRetryableWrites, and the string with retrywrites=false writes."""
import os

import pymongo
from pymongo.errors import OperationFailure

uri = os.environ["MAYFLY_URI"]
ca = os.environ.get("MAYFLY_CA_OPTION")
refused = os.environ.get("MAYFLY_EXPECT_RETRYABLE_REFUSAL") == "1"
options = {"serverSelectionTimeoutMS": 10000}
if ca:
    options["tlsCAFile"] = ca


def write(client):
    items = client.cosmos_connect.items_pymongo
    items.insert_one({"via": "pymongo"})
    assert items.count_documents({"via": "pymongo"}) >= 1
    tls = client.admin.command("serverStatus")["transportSecurity"]
    assert tls["1.3"] + tls["1.2"] >= 1, tls


client = pymongo.MongoClient(uri, **options)
try:
    assert client.admin.command("ping")["ok"] == 1
    if refused:
        try:
            client.cosmos_connect.items_pymongo.insert_one({"via": "pymongo"})
            raise AssertionError("a retryable write was accepted")
        except OperationFailure as e:
            assert e.code == 2 and "retrywrites=false" in str(e), e
    else:
        write(client)
finally:
    client.close()

if refused:
    client = pymongo.MongoClient(uri + "&retrywrites=false", **options)
    try:
        write(client)
    finally:
        client.close()
print("ok")
