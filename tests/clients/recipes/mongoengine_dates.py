"""MongoDB's TTL idiom through MongoEngine: `expireAfterSeconds` in `meta['indexes']` on a
DateTimeField, created with the collection on the first save; each document expires that many
seconds after its date (docs/ttl-recipes.md shows the recipe part). The test clock moves the
server's time, so the dates are counted from it."""
import datetime
import os

import mongoengine
from mongoengine import DateTimeField, Document, StringField

connection = mongoengine.connect(host=os.environ["MAYFLY_URI"], db="recipes_mongoengine_dates")
connection.drop_database("recipes_mongoengine_dates")
admin = connection.admin
admin.command("reaper", "pause")
admin.command("reaper", "runOnce")
# The server's (manual) clock: what datetime.now(timezone.utc) would be with wall time.
now = admin.command("hello")["localTime"].replace(microsecond=0)


# recipe:start
class Session(Document):
    user = StringField()
    created_at = DateTimeField(default=lambda: datetime.datetime.now(datetime.timezone.utc))
    # Each session expires an hour after it was created.
    meta = {
        "collection": "sessions",
        "indexes": [{"fields": ["created_at"], "expireAfterSeconds": 3600}],
    }
# recipe:end


Session(user="ada", created_at=now).save()
Session(user="alan", created_at=now - datetime.timedelta(seconds=3000)).save()
shown = [i for i in Session._get_collection().list_indexes() if i["name"] == "created_at_1"]
assert shown and shown[0]["expireAfterSeconds"] == 3600, shown


def users():
    return [s.user for s in Session.objects.order_by("user")]


admin.command("advanceClock", 599)
assert users() == ["ada", "alan"], users()
admin.command("advanceClock", 1)
assert users() == ["ada"], users()
admin.command("advanceClock", 3000)
assert users() == [], users()
assert Session.objects.count() == 0
assert admin.command("reaper", "runOnce")["reaped"] == 2
admin.command("reaper", "resume")
print("ok")
