// MongoDB's own TTL idiom through Mongoose: `expires` on a Date path makes a TTL index on that
// field, and each document expires that many seconds after its date (docs/ttl-recipes.md shows
// the recipe part). The test clock moves the server's time, so the dates are counted from it.
import mongoose from 'mongoose';
import assert from 'node:assert/strict';

await mongoose.connect(process.env.MAYFLY_URI, { dbName: 'recipes_mongoose_expires' });
const admin = mongoose.connection.db.admin();
await mongoose.connection.db.dropDatabase();
await admin.command({ reaper: 'pause' });
await admin.command({ reaper: 'runOnce' });
// The server's (manual) clock: what `Date.now` would be on a server that keeps wall time.
const { localTime } = await admin.command({ hello: 1 });
const now = new Date(Math.floor(localTime.getTime() / 1000) * 1000); // whole seconds
// recipe:start
const sessionSchema = new mongoose.Schema({
  user: String,
  // Each session expires an hour after it was created.
  createdAt: { type: Date, default: Date.now, expires: 3600 },
});
const Session = mongoose.model('Session', sessionSchema);
await Session.init(); // builds the indexes, and throws if one is refused
// recipe:end
await Session.create({ user: 'ada', createdAt: now });
await Session.create({ user: 'alan', createdAt: new Date(now.getTime() - 3000 * 1000) });
await Session.collection.insertOne({ user: 'grace' }); // no date: never expires by this index
const indexes = await Session.collection.indexes();
assert.ok(
  indexes.some((i) => i.name === 'createdAt_1' && i.expireAfterSeconds === 3600),
  JSON.stringify(indexes),
);
const users = async () => (await Session.find().sort({ user: 1 })).map((d) => d.user);
await admin.command({ advanceClock: 599 });
assert.deepEqual(await users(), ['ada', 'alan', 'grace']);
await admin.command({ advanceClock: 1 }); // alan's hour is up: 3000 + 600 seconds
assert.deepEqual(await users(), ['ada', 'grace']);
await admin.command({ advanceClock: 2999 });
assert.deepEqual(await users(), ['ada', 'grace']);
await admin.command({ advanceClock: 1 });
assert.deepEqual(await users(), ['grace']);
assert.equal(await Session.countDocuments(), 1);
const { reaped } = await admin.command({ reaper: 'runOnce' });
assert.equal(reaped, 2);
await admin.command({ reaper: 'resume' });
await mongoose.disconnect();
