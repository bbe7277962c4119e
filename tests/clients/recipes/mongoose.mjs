// The _ts TTL index and per-document ttl through Mongoose (docs/ttl-recipes.md shows the recipe
// part): Cosmos DB's model. MongoDB's own idiom, `expires` on a Date field, is in mongoose_expires.mjs.
import mongoose from 'mongoose';
import assert from 'node:assert/strict';

await mongoose.connect(process.env.MAYFLY_URI, { dbName: 'recipes_mongoose' });
const admin = mongoose.connection.db.admin();
await mongoose.connection.db.dropDatabase();
await admin.command({ reaper: 'pause' });
await admin.command({ reaper: 'runOnce' });
// recipe:start
const sessionSchema = new mongoose.Schema({ _id: String, user: String, ttl: Number });
// Every document expires an hour after its last write (not `expires` on a Date field).
sessionSchema.index({ _ts: 1 }, { expireAfterSeconds: 3600 });
const Session = mongoose.model('Session', sessionSchema);
await Session.init(); // builds the indexes, and throws if one is refused
await Session.create({ _id: 'default', user: 'ada' });
// A document's own ttl: a minute for this one, never for that one.
await Session.create({ _id: 'short', user: 'alan', ttl: 60 });
await Session.create({ _id: 'forever', user: 'grace', ttl: -1 });
// recipe:end
const ids = async () => (await Session.find().sort({ _id: 1 })).map((d) => d._id);
await admin.command({ advanceClock: 60 });
assert.deepEqual(await ids(), ['default', 'forever']);
await admin.command({ advanceClock: 3540 });
assert.deepEqual(await ids(), ['forever']);
await admin.command({ reaper: 'resume' });
await mongoose.disconnect();
