// mongosh against a one-member replica set (mayfly --replSet rs0, URI with replicaSet=rs0): the
// rs helpers and hello describe the set, its one member is the primary, and CRUD works.
const fail = (what, value) => { throw new Error(what + ': ' + EJSON.stringify(value)); };
const status = rs.status();
if (status.set !== 'rs0' || status.myState !== 1) fail('rs.status()', status);
if (status.members.length !== 1 || status.members[0].stateStr !== 'PRIMARY' || status.members[0].self !== true) {
  fail('rs.status() members', status.members);
}
const conf = rs.conf();
if (conf._id !== 'rs0' || conf.members.length !== 1 || conf.members[0].host !== status.members[0].name) {
  fail('rs.conf()', conf);
}
const isMaster = rs.isMaster();
if (isMaster.ismaster !== true || isMaster.setName !== 'rs0' || isMaster.primary !== conf.members[0].host) {
  fail('rs.isMaster()', isMaster);
}
const hello = db.hello();
if (hello.isWritablePrimary !== true || hello.secondary !== false || hello.setName !== 'rs0') fail('db.hello()', hello);
if (!hello.topologyVersion || !hello.lastWrite || !hello.lastWrite.opTime) fail('db.hello() topology', hello);
if (!hello.$clusterTime && !hello.operationTime) {
  // mongosh strips neither: a replica-set member sends both on every reply.
  fail('db.hello() lacks $clusterTime/operationTime', hello);
}
const items = db.getSiblingDB('replset_scenario').items;
items.drop();
items.insertOne({ _id: 1, n: 1 }, { writeConcern: { w: 'majority' } });
if (items.findOne({ _id: 1 }).n !== 1) fail('find', items.findOne({ _id: 1 }));
if (items.find().readConcern('majority').toArray().length !== 1) fail('majority read', items.find().toArray());
items.drop();
let stepDown = null;
try { rs.stepDown(); } catch (e) { stepDown = e.code; }
if (stepDown !== 262) fail('rs.stepDown()', stepDown);
print('ok');
