// The Node.js driver connects with a Cosmos DB connection string, unchanged but for host and
// port, and runs CRUD as the account's user; without credentials reads are refused.
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const account = process.env.MAYFLY_ACCOUNT;
const client = new MongoClient(process.env.MAYFLY_URI, { serverSelectionTimeoutMS: 10000 });
try {
  const status = await client.db('admin').command({ connectionStatus: 1 });
  assert.deepEqual(status.authInfo.authenticatedUsers, [{ user: account, db: 'admin' }]);
  const items = client.db('cosmos_scenario').collection('items_node');
  await items.deleteMany({});
  await items.insertMany([1, 2, 3, 4].map((i) => ({ _id: i, tag: i % 2 ? 'odd' : 'even' })));
  assert.equal(await items.countDocuments({ tag: 'odd' }), 2);
  const updated = await items.updateMany({ tag: 'even' }, { $set: { seen: true } });
  assert.equal(updated.modifiedCount, 2);
  assert.deepEqual(
    (await items.find({ seen: true }).sort({ _id: 1 }).toArray()).map((d) => d._id),
    [2, 4],
  );
  assert.equal((await items.deleteOne({ _id: 1 })).deletedCount, 1);
  assert.equal(await items.countDocuments(), 3);
  await items.drop();
} finally {
  await client.close();
}

const anonymous = new MongoClient(process.env.MAYFLY_ANONYMOUS_URI, { serverSelectionTimeoutMS: 10000 });
try {
  await assert.rejects(anonymous.db('cosmos_scenario').collection('items_node').findOne(), (e) => e.code === 13);
} finally {
  await anonymous.close();
}
console.log('ok');
