"""MongoDB's "expire at a clock time" pattern through pymongo: a TTL index with
`expireAfterSeconds=0` on a date field, and each document expires at the time its date says
(docs/ttl-recipes.md shows the recipe part). The test clock moves the server's time, so the
dates are counted from it."""
import os
from datetime import timedelta

import pymongo

client = pymongo.MongoClient(os.environ["MAYFLY_URI"])
client.drop_database("recipes_pymongo_expire_at")
client.admin.command("reaper", "pause")
client.admin.command("reaper", "runOnce")
# The server's (manual) clock: what datetime.now(timezone.utc) would be with wall time.
now = client.admin.command("hello")["localTime"].replace(microsecond=0)
# recipe:start
events = client.recipes_pymongo_expire_at.events
# Each document expires at the time its expiresAt says.
events.create_index([("expiresAt", pymongo.ASCENDING)], expireAfterSeconds=0)
events.insert_one({"_id": "minute", "expiresAt": now + timedelta(minutes=1)})
events.insert_one({"_id": "hour", "expiresAt": now + timedelta(hours=1)})
# The earliest date of an array counts; no date at all: never expires.
events.insert_one({"_id": "either", "expiresAt": [now + timedelta(hours=2), now + timedelta(minutes=2)]})
events.insert_one({"_id": "kept", "expiresAt": "tomorrow"})
# recipe:end


def ids():
    return [d["_id"] for d in events.find().sort("_id")]


shown = [i for i in events.list_indexes() if i["name"] == "expiresAt_1"]
assert shown and shown[0]["expireAfterSeconds"] == 0, shown
client.admin.command("advanceClock", 59)
assert ids() == ["either", "hour", "kept", "minute"], ids()
client.admin.command("advanceClock", 1)
assert ids() == ["either", "hour", "kept"], ids()
client.admin.command("advanceClock", 60)
assert ids() == ["hour", "kept"], ids()
assert events.count_documents({}) == 2
client.admin.command("advanceClock", 3480)
assert ids() == ["kept"], ids()
# The expired _id is free again at once, reaped or not.
events.insert_one({"_id": "minute", "expiresAt": now + timedelta(days=1)})
assert ids() == ["kept", "minute"], ids()
# The re-insert replaced the expired "minute": "either" and "hour" are left to reap.
assert client.admin.command("reaper", "runOnce")["reaped"] == 2
client.admin.command("reaper", "resume")
print("ok")
