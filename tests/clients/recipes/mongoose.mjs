// The _ts TTL index and per-document ttl through Mongoose (docs/ttl-recipes.md shows the recipe
// part). Mongoose's `expires` on a Date field asks for a TTL index on that field, which Cosmos DB
// and mayfly refuse; Mongoose reports the refusal only through `Model.init()` or the model's
// 'index' event, so an application that awaits neither runs without TTL.
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
// What `expires` does instead: Model.init() rejects with Cosmos DB's error.
const Dated = mongoose.model('Dated', new mongoose.Schema({ at: { type: Date, expires: 3600 } }));
await assert.rejects(Dated.init(), /supported on '_ts' field only/);
await admin.command({ reaper: 'resume' });
await mongoose.disconnect();
