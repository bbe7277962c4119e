// Change streams through the Node.js driver against a one-member replica set (mayfly --replSet
// rs0): a collection's stream sees an insert, an update (its updateDescription), a replace and a
// delete; a stream resumed after a saved token sees exactly what happened in between;
// fullDocument 'updateLookup' brings the updated document; a database's stream sees every
// collection of the database. Every event is compared whole.
import { MongoClient, Timestamp } from 'mongodb';
import assert from 'node:assert/strict';

const DB = 'node_change_stream';
const client = new MongoClient(process.env.MAYFLY_URI, { serverSelectionTimeoutMS: 5000 });

// The next event, or a failure after 10 s (a missing event must not hang the runner).
async function next(stream) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('no change event within 10 s')), 10000);
  });
  try {
    return await Promise.race([stream.next(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

// Opens the stream on the server (the driver sends its aggregate lazily) and checks that
// nothing is pending, so later writes are the stream's first events.
async function opened(stream) {
  assert.equal(await stream.tryNext(), null);
  return stream;
}

// The event without its resume token and times, which are checked here and returned apart.
let lastTime = null;
function body(event) {
  const { _id, clusterTime, wallTime, ...rest } = event;
  assert.equal(typeof _id._data, 'string');
  assert.ok(clusterTime instanceof Timestamp, `clusterTime ${clusterTime}`);
  assert.ok(wallTime instanceof Date, `wallTime ${wallTime}`);
  if (lastTime !== null) assert.ok(clusterTime.gt(lastTime), 'cluster times increase');
  lastTime = clusterTime;
  return rest;
}

try {
  const db = client.db(DB);
  await db.dropDatabase();
  await db.createCollection('items');
  const items = db.collection('items');
  const ns = { db: DB, coll: 'items' };

  // One stream on the collection: insert, update, replace, delete, in order and whole.
  const stream = await opened(items.watch([], { maxAwaitTimeMS: 100 }));
  await items.insertOne({ _id: 1, a: 1, b: 'x', list: [1, 2, 3] });
  await items.updateOne({ _id: 1 }, { $set: { a: 2, 'c.d': true }, $unset: { b: '' } });
  await items.updateOne({ _id: 1 }, [{ $set: { list: [{ $first: '$list' }] } }]);
  await items.replaceOne({ _id: 1 }, { z: 'replaced' });
  await items.deleteOne({ _id: 1 });
  assert.deepEqual(body(await next(stream)), {
    operationType: 'insert',
    fullDocument: { _id: 1, a: 1, b: 'x', list: [1, 2, 3] },
    ns,
    documentKey: { _id: 1 },
  });
  assert.deepEqual(body(await next(stream)), {
    operationType: 'update',
    ns,
    documentKey: { _id: 1 },
    updateDescription: { updatedFields: { a: 2, c: { d: true } }, removedFields: ['b'], truncatedArrays: [] },
  });
  assert.deepEqual(body(await next(stream)), {
    operationType: 'update',
    ns,
    documentKey: { _id: 1 },
    updateDescription: { updatedFields: {}, removedFields: [], truncatedArrays: [{ field: 'list', newSize: 1 }] },
  });
  assert.deepEqual(body(await next(stream)), {
    operationType: 'replace',
    fullDocument: { _id: 1, z: 'replaced' },
    ns,
    documentKey: { _id: 1 },
  });
  const deleted = await next(stream);
  assert.deepEqual(body(deleted), { operationType: 'delete', ns, documentKey: { _id: 1 } });
  assert.equal(await stream.tryNext(), null);
  await stream.close();

  // Changes while no stream is open; a stream resumed after the delete sees exactly them.
  const saved = deleted._id;
  await items.insertMany([{ _id: 2, n: 0 }, { _id: 3, n: 0 }]);
  await items.deleteOne({ _id: 3 });
  const resumed = items.watch([], { resumeAfter: saved, maxAwaitTimeMS: 100 });
  assert.deepEqual(body(await next(resumed)), {
    operationType: 'insert', fullDocument: { _id: 2, n: 0 }, ns, documentKey: { _id: 2 },
  });
  assert.deepEqual(body(await next(resumed)), {
    operationType: 'insert', fullDocument: { _id: 3, n: 0 }, ns, documentKey: { _id: 3 },
  });
  assert.deepEqual(body(await next(resumed)), { operationType: 'delete', ns, documentKey: { _id: 3 } });
  assert.equal(await resumed.tryNext(), null, 'nothing else happened in between');
  await resumed.close();

  // fullDocument 'updateLookup': the update event carries the document as it is now.
  const lookup = await opened(items.watch([], { fullDocument: 'updateLookup', maxAwaitTimeMS: 100 }));
  await items.updateOne({ _id: 2 }, { $inc: { n: 5 }, $set: { tag: 'looked-up' } });
  assert.deepEqual(body(await next(lookup)), {
    operationType: 'update',
    ns,
    documentKey: { _id: 2 },
    updateDescription: { updatedFields: { n: 5, tag: 'looked-up' }, removedFields: [], truncatedArrays: [] },
    fullDocument: { _id: 2, n: 5, tag: 'looked-up' },
  });
  await lookup.close();

  // A stream on the database sees both of its collections, and not another database's.
  const onDb = await opened(db.watch([], { maxAwaitTimeMS: 100 }));
  await client.db(`${DB}_other`).collection('elsewhere').insertOne({ _id: 'not seen' });
  await items.insertOne({ _id: 4 });
  await db.collection('second').insertOne({ _id: 'o', v: 1 });
  assert.deepEqual(body(await next(onDb)), {
    operationType: 'insert', fullDocument: { _id: 4 }, ns, documentKey: { _id: 4 },
  });
  assert.deepEqual(body(await next(onDb)), {
    operationType: 'insert',
    fullDocument: { _id: 'o', v: 1 },
    ns: { db: DB, coll: 'second' },
    documentKey: { _id: 'o' },
  });
  assert.equal(await onDb.tryNext(), null);
  await onDb.close();

  await db.dropDatabase();
  await client.db(`${DB}_other`).dropDatabase();
  console.log('ok');
} finally {
  await client.close();
}
