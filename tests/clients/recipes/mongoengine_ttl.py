"""The _ts TTL index and per-document ttl through MongoEngine (docs/ttl-recipes.md shows the
recipe part): Cosmos DB's model. MongoDB's own, a TTL index on a DateTimeField, is in
mongoengine_dates.py."""
import os

import mongoengine
from mongoengine import Document, IntField, StringField

connection = mongoengine.connect(host=os.environ["MAYFLY_URI"], db="recipes_mongoengine")
connection.drop_database("recipes_mongoengine")
admin = connection.admin
admin.command("reaper", "pause")
admin.command("reaper", "runOnce")


# recipe:start
class Session(Document):
    id = StringField(primary_key=True)
    user = StringField()
    ttl = IntField()  # a document's own lifetime in seconds; -1: never expires

    # `_ts` is no field of the model (the server keeps it and never returns it), so the
    # collection's TTL index is created through the collection itself.
    meta = {"collection": "sessions", "auto_create_index": False}


# Every document expires an hour after its last write...
Session._get_collection().create_index([("_ts", 1)], expireAfterSeconds=3600)
Session(id="default", user="ada").save()
# ...unless it says otherwise: a minute for this one, never for that one.
Session(id="short", user="alan", ttl=60).save()
Session(id="forever", user="grace", ttl=-1).save()
# recipe:end


def ids():
    return [s.id for s in Session.objects.order_by("id")]


admin.command("advanceClock", 60)
assert ids() == ["default", "forever"], ids()
admin.command("advanceClock", 3540)
assert ids() == ["forever"], ids()

admin.command("reaper", "resume")
print("ok")
