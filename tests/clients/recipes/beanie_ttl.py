"""The _ts TTL index and per-document ttl through Beanie (docs/ttl-recipes.md shows the recipe
part): Cosmos DB's model. MongoDB's own, a TTL index on a datetime field, is in beanie_dates.py."""
import asyncio
import os
from typing import Optional

from beanie import Document, init_beanie
from pymongo import ASCENDING, AsyncMongoClient, IndexModel


# recipe:start
class Session(Document):
    id: str
    user: str
    ttl: Optional[int] = None  # a document's own lifetime in seconds; -1: never expires

    class Settings:
        name = "sessions"
        keep_nulls = False  # no `ttl: null` in documents that have none
        # Every document expires an hour after its last write, unless its ttl says otherwise.
        indexes = [IndexModel([("_ts", ASCENDING)], expireAfterSeconds=3600)]
# recipe:end


async def main():
    client = AsyncMongoClient(os.environ["MAYFLY_URI"])
    await client.drop_database("recipes_beanie")
    admin = client.admin
    await admin.command("reaper", "pause")
    await admin.command("reaper", "runOnce")
    await init_beanie(database=client.recipes_beanie, document_models=[Session])
    await Session(id="default", user="ada").insert()
    await Session(id="short", user="alan", ttl=60).insert()
    await Session(id="forever", user="grace", ttl=-1).insert()
    stored = await client.recipes_beanie.sessions.find_one({"_id": "default"})
    assert "ttl" not in stored, stored

    async def ids():
        return [s.id for s in await Session.find_all().sort("_id").to_list()]

    await admin.command("advanceClock", 60)
    assert await ids() == ["default", "forever"], await ids()
    await admin.command("advanceClock", 3540)
    assert await ids() == ["forever"], await ids()

    await admin.command("reaper", "resume")
    await client.close()
    print("ok")


asyncio.run(main())
