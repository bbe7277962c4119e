"""MongoDB's TTL idiom through Beanie: a TTL index on a datetime field in `Settings.indexes`,
created by `init_beanie`; each document expires that many seconds after its date
(docs/ttl-recipes.md shows the recipe part). The test clock moves the server's time, so the
dates are counted from it."""
import asyncio
import os
from datetime import datetime, timedelta, timezone

from beanie import Document, init_beanie
from pydantic import Field
from pymongo import ASCENDING, AsyncMongoClient, IndexModel


# recipe:start
class Session(Document):
    user: str
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))

    class Settings:
        name = "sessions"
        # Each session expires an hour after it was created.
        indexes = [IndexModel([("created_at", ASCENDING)], expireAfterSeconds=3600)]
# recipe:end


async def main():
    client = AsyncMongoClient(os.environ["MAYFLY_URI"])
    await client.drop_database("recipes_beanie_dates")
    admin = client.admin
    await admin.command("reaper", "pause")
    await admin.command("reaper", "runOnce")
    # The server's (manual) clock: what datetime.now(timezone.utc) would be with wall time.
    now = (await admin.command("hello"))["localTime"].replace(microsecond=0)
    await init_beanie(database=client.recipes_beanie_dates, document_models=[Session])
    await Session(user="ada", created_at=now).insert()
    await Session(user="alan", created_at=now - timedelta(seconds=3000)).insert()
    indexes = await (await client.recipes_beanie_dates.sessions.list_indexes()).to_list()
    shown = [i for i in indexes if i["name"] == "created_at_1"]
    assert shown and shown[0]["expireAfterSeconds"] == 3600, indexes

    async def users():
        return [s.user for s in await Session.find_all().sort("user").to_list()]

    await admin.command("advanceClock", 599)
    assert await users() == ["ada", "alan"], await users()
    await admin.command("advanceClock", 1)
    assert await users() == ["ada"], await users()
    await admin.command("advanceClock", 3000)
    assert await users() == [], await users()
    assert (await admin.command("reaper", "runOnce"))["reaped"] == 2
    await admin.command("reaper", "resume")
    await client.close()
    print("ok")


asyncio.run(main())
