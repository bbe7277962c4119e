// MongoDB's own TTL model through the Node.js driver: a TTL index on a date field, and each
// document expires that many seconds after its date (docs/ttl-recipes.md shows the recipe part).
// The test clock moves the server's time, so the dates are counted from it.
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const client = new MongoClient(process.env.MAYFLY_URI);
const admin = client.db('admin');
await client.db('recipes_node_dates').dropDatabase();
await admin.command({ reaper: 'pause' });
await admin.command({ reaper: 'runOnce' });
// The server's (manual) clock: what `new Date()` would be on a server that keeps wall time.
const { localTime } = await admin.command({ hello: 1 });
const now = new Date(Math.floor(localTime.getTime() / 1000) * 1000); // whole seconds
// recipe:start
const sessions = client.db('recipes_node_dates').collection('sessions');
// Each session expires an hour after its createdAt.
await sessions.createIndex({ createdAt: 1 }, { expireAfterSeconds: 3600 });
await sessions.insertOne({ _id: 'ada', createdAt: now });
await sessions.insertOne({ _id: 'alan', createdAt: new Date(now.getTime() - 3000 * 1000) });
// recipe:end
await sessions.insertOne({ _id: 'grace', createdAt: now.toISOString() }); // a string, not a date
const ids = async () => (await sessions.find().sort({ _id: 1 }).toArray()).map((d) => d._id);
await admin.command({ advanceClock: 599 });
assert.deepEqual(await ids(), ['ada', 'alan', 'grace']);
await admin.command({ advanceClock: 1 });
assert.deepEqual(await ids(), ['ada', 'grace']);
await admin.command({ advanceClock: 3000 });
assert.deepEqual(await ids(), ['grace']);
assert.equal(await sessions.countDocuments(), 1);
assert.equal(await sessions.estimatedDocumentCount(), 1);
assert.equal((await admin.command({ reaper: 'runOnce' })).reaped, 2);
await admin.command({ reaper: 'resume' });
await client.close();
