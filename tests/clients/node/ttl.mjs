// TTL through the Node.js driver: Int32, Long and Double ttl values, exact expiry with the test
// commands (the runner starts the server with a manual clock).
import { MongoClient, Double, Int32, Long } from 'mongodb';
import assert from 'node:assert/strict';

const client = new MongoClient(process.env.MAYFLY_URI, { serverSelectionTimeoutMS: 5000 });
try {
  const admin = client.db('admin');
  const coll = client.db('ttl_node').collection('items');
  await coll.drop().catch(() => {});
  await admin.command({ reaper: 'pause' });
  // Scenarios share one server: start from an empty backlog.
  await admin.command({ reaper: 'runOnce' });
  await coll.createIndex({ _ts: 1 }, { expireAfterSeconds: 10 });
  const indexes = await coll.indexes();
  assert.equal(indexes.find((i) => i.name === '_ts_1').expireAfterSeconds, 10);
  await coll.insertMany([
    { _id: 'int', ttl: new Int32(20) },
    { _id: 'long', ttl: Long.fromNumber(20) },
    { _id: 'double', ttl: new Double(20) },
    { _id: 'fraction', ttl: new Double(20.5) },
    { _id: 'plain' },
  ]);
  await admin.command({ advanceClock: 9 });
  assert.equal(await coll.countDocuments(), 5);
  await admin.command({ advanceClock: 1 });
  assert.deepEqual((await coll.find().toArray()).map((d) => d._id).sort(), ['double', 'int', 'long']);
  await admin.command({ advanceClock: 10 });
  assert.equal(await coll.countDocuments(), 0);
  const status = await admin.command({ serverStatus: 1 });
  assert.equal(Number(status.ttl.backlog), 5);
  const { reaped } = await admin.command({ reaper: 'runOnce' });
  assert.equal(Number(reaped), 5);
  await admin.command({ reaper: 'resume' });
  console.log('ok');
} finally {
  await client.close();
}
