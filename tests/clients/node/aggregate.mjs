// The Node.js driver and $merge: a pipeline's totals merged into another collection, matched
// on _id, updating what is there and inserting what is not.
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const client = new MongoClient(process.env.MAYFLY_URI, { serverSelectionTimeoutMS: 5000 });
try {
  const db = client.db('node_aggregate');
  await db.dropDatabase();
  await db.collection('sales').insertMany([
    { item: 'a', qty: 2 },
    { item: 'a', qty: 3 },
    { item: 'b', qty: 1 },
  ]);
  await db.collection('totals').insertOne({ _id: 'a', qty: 100, note: 'kept' });
  const out = await db
    .collection('sales')
    .aggregate([
      { $group: { _id: '$item', qty: { $sum: '$qty' } } },
      { $merge: { into: 'totals', on: '_id', whenMatched: 'merge', whenNotMatched: 'insert' } },
    ])
    .toArray();
  assert.deepEqual(out, []);
  const totals = await db.collection('totals').find().sort({ _id: 1 }).toArray();
  assert.deepEqual(totals, [
    { _id: 'a', qty: 5, note: 'kept' },
    { _id: 'b', qty: 1 },
  ]);
  await db.dropDatabase();
} finally {
  await client.close();
}
console.log('ok');
