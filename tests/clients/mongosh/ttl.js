// TTL through mongosh: the _ts TTL index, per-document ttl in each numeric form, exact expiry
// with the test commands (the runner starts the server with a manual clock).
const coll = db.getSiblingDB('ttl_mongosh').items;
coll.drop();
const admin = (cmd) => db.adminCommand(cmd);
const check = (cond, what) => { if (!cond) throw new Error(what); };

admin({ reaper: 'pause' });
// Scenarios share one server: start from an empty backlog.
admin({ reaper: 'runOnce' });
coll.createIndex({ _ts: 1 }, { expireAfterSeconds: 10 });
const index = coll.getIndexes().find((i) => i.name === '_ts_1');
check(index && Number(index.expireAfterSeconds) === 10, 'getIndexes shows expireAfterSeconds 10: ' + EJSON.stringify(index));

coll.insertMany([
  { _id: 'double', ttl: 20.0 },
  { _id: 'int', ttl: NumberInt(20) },
  { _id: 'long', ttl: NumberLong('20') },
  { _id: 'fraction', ttl: 20.5 },
  { _id: 'too-big', ttl: NumberLong('2147483649') },
  { _id: 'plain' },
]);
const ids = () => coll.find({}, { _id: 1 }).toArray().map((d) => d._id).sort().join(',');

admin({ advanceClock: 9 });
check(coll.countDocuments({}) === 6, 'all six visible at T+9: ' + ids());
admin({ advanceClock: 1 });
check(ids() === 'double,int,long', 'at T+10 the invalid ttls and the plain doc are gone: ' + ids());
admin({ advanceClock: 9 });
check(coll.countDocuments({}) === 3, 'ttl 20 visible at T+19');
admin({ advanceClock: 1 });
check(coll.countDocuments({}) === 0 && coll.estimatedDocumentCount() === 0, 'all gone at T+20');
check(coll.findOne({ _id: 'int' }) === null, 'findOne sees nothing');

const ttl = db.serverStatus().ttl;
check(Number(ttl.backlog) === 6 && ttl.paused === true, 'backlog 6 while paused: ' + EJSON.stringify(ttl));
const reaped = admin({ reaper: 'runOnce' }).reaped;
check(Number(reaped) === 6, 'runOnce reaped ' + reaped);
admin({ reaper: 'resume' });

// MongoDB's own model beside Cosmos's: a TTL index on a date field (TTL-25); compound keys are
// refused as mongod refuses them.
coll.createIndex({ createdAt: 1 }, { expireAfterSeconds: 10 });
check(coll.getIndexes().some((i) => i.name === 'createdAt_1' && i.expireAfterSeconds === 10),
  'the date TTL index is listed with its expireAfterSeconds');
let refused = null;
try { coll.createIndex({ createdAt: 1, n: 1 }, { expireAfterSeconds: 10 }); } catch (e) { refused = e; }
check(refused && refused.code === 67, 'a compound TTL index: 67 CannotCreateIndex');
print('ok');
