// CRUD through the Node.js driver, and a cursor over 500 documents (getMore past the first batch).
import { MongoClient, ObjectId } from 'mongodb';
import assert from 'node:assert/strict';

const client = new MongoClient(process.env.MAYFLY_URI, { serverSelectionTimeoutMS: 5000 });
try {
  const db = client.db('node_crud');
  await db.dropDatabase();
  const c = db.collection('people');

  // insertOne / insertMany
  assert.equal((await c.insertOne({ _id: 1, name: 'ada', age: 36, tags: ['math', 'engines'] })).insertedId, 1);
  const many = await c.insertMany([
    { _id: 2, name: 'grace', age: 85, tags: ['navy', 'cobol'] },
    { _id: 3, name: 'alan', age: 41, tags: ['math'] },
    { _id: 4, name: 'edsger', age: 72, tags: ['math', 'structured'] },
    { name: 'no-id', age: 1 },
  ]);
  assert.equal(many.insertedCount, 4);
  assert.ok(many.insertedIds[3] instanceof ObjectId);
  await assert.rejects(c.insertOne({ _id: 1 }), (e) => e.code === 11000);

  // find / findOne
  assert.deepEqual(await c.findOne({ _id: 2 }, { projection: { _id: 0, name: 1 } }), { name: 'grace' });
  assert.deepEqual((await c.find({ tags: 'math' }).sort({ _id: 1 }).toArray()).map((x) => x._id), [1, 3, 4]);
  assert.deepEqual(
    (await c.find({ age: { $gt: 40 } }).sort({ age: -1 }).limit(2).toArray()).map((x) => x.name),
    ['grace', 'edsger'],
  );
  assert.equal(await c.findOne({ _id: 999 }), null);

  // counts, distinct
  assert.equal(await c.countDocuments(), 5);
  assert.equal(await c.countDocuments({ age: { $gte: 41 } }), 3);
  assert.equal(await c.estimatedDocumentCount(), 5);
  assert.deepEqual((await c.distinct('tags')).sort(), ['cobol', 'engines', 'math', 'navy', 'structured']);

  // updateOne / updateMany / replaceOne
  let u = await c.updateOne({ _id: 1 }, { $inc: { age: 1 }, $push: { tags: 'poetry' } });
  assert.equal(u.matchedCount, 1);
  assert.equal(u.modifiedCount, 1);
  assert.deepEqual(await c.findOne({ _id: 1 }), { _id: 1, name: 'ada', age: 37, tags: ['math', 'engines', 'poetry'] });
  u = await c.updateMany({ tags: 'math' }, { $set: { mathematician: true } });
  assert.equal(u.modifiedCount, 3);
  u = await c.updateOne({ _id: 'new' }, { $set: { name: 'upserted' } }, { upsert: true });
  assert.equal(u.upsertedId, 'new');
  u = await c.replaceOne({ _id: 3 }, { name: 'turing', age: 41 });
  assert.equal(u.modifiedCount, 1);
  assert.deepEqual(await c.findOne({ _id: 3 }), { _id: 3, name: 'turing', age: 41 });

  // deleteOne / deleteMany
  assert.equal((await c.deleteOne({ _id: 'new' })).deletedCount, 1);
  assert.equal((await c.deleteMany({ age: { $lt: 40 } })).deletedCount, 2);
  assert.equal(await c.countDocuments(), 3);

  // listing and drop
  const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((x) => x.name);
  assert.deepEqual(names, ['people']);
  assert.ok((await client.db('admin').admin().listDatabases()).databases.some((x) => x.name === 'node_crud'));
  assert.equal(await c.drop(), true);

  // a cursor over 500 documents
  const big = db.collection('cursor_docs');
  await big.insertMany(Array.from({ length: 500 }, (_, i) => ({ _id: i, sq: i * i })));
  let seen = 0;
  for await (const x of big.find().sort({ _id: 1 })) {
    assert.equal(x._id, seen);
    assert.equal(x.sq, seen * seen);
    seen++;
  }
  assert.equal(seen, 500);
  const all = await big.find({}, { batchSize: 50 }).toArray();
  assert.equal(all.length, 500);

  await db.dropDatabase();
} finally {
  await client.close();
}
console.log('ok');
