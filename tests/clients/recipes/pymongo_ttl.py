"""The _ts TTL index and per-document ttl through pymongo (docs/ttl-recipes.md shows the recipe
part)."""
import os

import pymongo

client = pymongo.MongoClient(os.environ["MAYFLY_URI"])
client.drop_database("recipes_pymongo")
client.admin.command("reaper", "pause")
client.admin.command("reaper", "runOnce")
# recipe:start
sessions = client.recipes_pymongo.sessions
# Every document expires an hour after its last write...
sessions.create_index([("_ts", pymongo.ASCENDING)], expireAfterSeconds=3600)
sessions.insert_one({"_id": "default", "user": "ada"})
# ...unless it says otherwise: a minute for this one, never for that one.
sessions.insert_one({"_id": "short", "user": "alan", "ttl": 60})
sessions.insert_one({"_id": "forever", "user": "grace", "ttl": -1})
# recipe:end


def ids():
    return [d["_id"] for d in sessions.find().sort("_id")]


client.admin.command("advanceClock", 60)
assert ids() == ["default", "forever"], ids()
client.admin.command("advanceClock", 3540)
assert ids() == ["forever"], ids()
client.admin.command("reaper", "resume")
print("ok")
