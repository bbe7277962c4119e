// The _ts TTL index and per-document ttl through the Node.js driver (docs/ttl-recipes.md shows
// the recipe part).
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const client = new MongoClient(process.env.MAYFLY_URI);
const admin = client.db('admin');
await client.db('recipes_node').dropDatabase();
await admin.command({ reaper: 'pause' });
await admin.command({ reaper: 'runOnce' });
// recipe:start
const sessions = client.db('recipes_node').collection('sessions');
// Every document expires an hour after its last write...
await sessions.createIndex({ _ts: 1 }, { expireAfterSeconds: 3600 });
await sessions.insertOne({ _id: 'default', user: 'ada' });
// ...unless it says otherwise: a minute for this one, never for that one.
await sessions.insertOne({ _id: 'short', user: 'alan', ttl: 60 });
await sessions.insertOne({ _id: 'forever', user: 'grace', ttl: -1 });
// recipe:end
const ids = async () => (await sessions.find().sort({ _id: 1 }).toArray()).map((d) => d._id);
await admin.command({ advanceClock: 60 });
assert.deepEqual(await ids(), ['default', 'forever']);
await admin.command({ advanceClock: 3540 });
assert.deepEqual(await ids(), ['forever']);
await admin.command({ reaper: 'resume' });
await client.close();
