// CRUD through mongosh's shell helpers: inserts, reads, updates, replaces, deletes, counts,
// distinct, collection listing, listDatabases, stats, drop, and cursors that need getMore.
// mongosh has no legacy `tojson`; canonical EJSON keeps types visible in comparisons.
function str(x) {
  return EJSON.stringify(x, { relaxed: false });
}
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}
function eq(actual, expected, what) {
  if (str(actual) !== str(expected)) {
    throw new Error(what + ': expected ' + str(expected) + ', got ' + str(actual));
  }
}

const d = db.getSiblingDB('mongosh_crud');
d.dropDatabase();
const c = d.people;

// insertOne / insertMany
const one = c.insertOne({ _id: 1, name: 'ada', age: 36, tags: ['math', 'engines'] });
check(one.acknowledged && one.insertedId === 1, 'insertOne result ' + str(one));
const many = c.insertMany([
  { _id: 2, name: 'grace', age: 85, tags: ['navy', 'cobol'] },
  { _id: 3, name: 'alan', age: 41, tags: ['math'] },
  { _id: 4, name: 'edsger', age: 72, tags: ['math', 'structured'] },
  { name: 'no-id', age: 1 },
]);
check(many.acknowledged && Object.keys(many.insertedIds).length === 4, 'insertMany ' + str(many));
check(many.insertedIds[3] instanceof ObjectId, 'generated _id is an ObjectId');
let dup = false;
try { c.insertOne({ _id: 1 }); } catch (e) { dup = e.code === 11000; }
check(dup, 'duplicate _id raises 11000');

// find / findOne
eq(c.findOne({ _id: 2 }, { _id: 0, name: 1 }), { name: 'grace' }, 'findOne with projection');
eq(c.find({ tags: 'math' }).sort({ _id: 1 }).toArray().map((x) => x._id), [1, 3, 4], 'find by array element');
eq(c.find({ age: { $gt: 40 } }).sort({ age: -1 }).limit(2).toArray().map((x) => x.name), ['grace', 'edsger'], 'sort + limit');
eq(c.find().skip(1).sort({ _id: 1 }).limit(1).toArray()[0]._id, 2, 'skip');
check(c.findOne({ _id: 999 }) === null, 'findOne miss is null');

// countDocuments / estimatedDocumentCount / distinct
eq(c.countDocuments(), 5, 'countDocuments()');
eq(c.countDocuments({ age: { $gte: 41 } }), 3, 'countDocuments(filter)');
eq(c.estimatedDocumentCount(), 5, 'estimatedDocumentCount');
eq(c.distinct('tags').sort(), ['cobol', 'engines', 'math', 'navy', 'structured'], 'distinct over arrays');
eq(c.distinct('name', { age: { $lt: 50 } }).sort(), ['ada', 'alan', 'no-id'], 'distinct with filter');

// updateOne / updateMany / replaceOne
let u = c.updateOne({ _id: 1 }, { $inc: { age: 1 }, $push: { tags: 'poetry' } });
check(u.matchedCount === 1 && u.modifiedCount === 1, 'updateOne ' + str(u));
eq(c.findOne({ _id: 1 }).age, 37, '$inc applied');
eq(c.findOne({ _id: 1 }).tags, ['math', 'engines', 'poetry'], '$push applied');
u = c.updateMany({ tags: 'math' }, { $set: { mathematician: true } });
check(u.matchedCount === 3 && u.modifiedCount === 3, 'updateMany ' + str(u));
eq(c.countDocuments({ mathematician: true }), 3, 'updateMany applied');
u = c.updateOne({ _id: 'new' }, { $set: { name: 'upserted' } }, { upsert: true });
check(u.insertedId === 'new' && u.upsertedCount === 1 && u.matchedCount === 0, 'upsert ' + str(u));
u = c.updateOne({ _id: 999 }, { $set: { x: 1 } });
check(u.matchedCount === 0 && u.modifiedCount === 0, 'updateOne miss');
const r = c.replaceOne({ _id: 3 }, { name: 'turing', age: 41 });
check(r.matchedCount === 1 && r.modifiedCount === 1, 'replaceOne ' + str(r));
eq(c.findOne({ _id: 3 }), { _id: 3, name: 'turing', age: 41 }, 'replaceOne result');

// deleteOne / deleteMany
let del = c.deleteOne({ _id: 'new' });
check(del.deletedCount === 1, 'deleteOne ' + str(del));
del = c.deleteMany({ age: { $lt: 40 } });
check(del.deletedCount === 2, 'deleteMany ' + str(del));
eq(c.countDocuments(), 3, 'count after deletes');

// collections, databases, stats
d.other.insertOne({ x: 1 });
eq(d.getCollectionNames().sort(), ['other', 'people'], 'getCollectionNames');
eq(d.getCollectionInfos({ name: 'people' }).map((x) => x.name), ['people'], 'getCollectionInfos');
const shown = d.runCommand({ listCollections: 1, nameOnly: true }).cursor.firstBatch.map((x) => x.name).sort();
eq(shown, ['other', 'people'], 'show collections (listCollections nameOnly)');
const dbs = db.adminCommand({ listDatabases: 1 });
check(dbs.ok === 1 && dbs.databases.some((x) => x.name === 'mongosh_crud'), 'listDatabases ' + str(dbs));
const stats = c.stats();
check(stats.ok === 1 && stats.count === 3 && stats.ns === 'mongosh_crud.people', 'stats ' + str(stats));
check(c.drop() === true, 'drop');
eq(d.getCollectionNames(), ['other'], 'after drop');
check(c.findOne() === null, 'dropped collection is empty');

// cursors: 500 documents, batches of 101 then getMore
const big = d.cursor_docs;
big.insertMany(Array.from({ length: 500 }, (_, i) => ({ _id: i, sq: i * i })));
const all = big.find().sort({ _id: 1 }).toArray();
eq(all.length, 500, 'toArray length');
check(all.every((x, i) => x._id === i && x.sq === i * i), 'toArray content');
const cur = big.find({}).sort({ _id: 1 });
let seen = 0;
while (cur.hasNext()) {
  const x = cur.next();
  check(x._id === seen, 'cursor order at ' + seen);
  seen++;
}
eq(seen, 500, 'next() past the first batch of 101');
const small = big.find().batchSize(7);
for (let i = 0; i < 150; i++) small.next();
check(small.hasNext(), 'batchSize(7) cursor continues');
small.close();

d.dropDatabase();
print('ok');
