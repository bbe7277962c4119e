// mongosh against `--compat cosmos` with the portal's string: the Cosmos extension commands as
// Microsoft documents them (`db.runCommand({customAction: ...})`), and a shard key's rules.
const app = db.getSiblingDB('cosmos_profile_shell');
app.dropDatabase();
sleep(1100); // the throttled budget refills
function check(condition, what, value) {
  if (!condition) throw new Error(what + ': ' + EJSON.stringify(value));
}

let reply = app.runCommand({
  customAction: 'CreateCollection',
  collection: 'orders',
  shardKey: 'tenant',
  offerThroughput: 400,
});
check(reply.ok === 1, 'CreateCollection', reply);

reply = app.runCommand({ customAction: 'GetCollection', collection: 'orders' });
check(reply.ok === 1 && reply.collection === 'orders' && reply.database === 'cosmos_profile_shell', 'GetCollection', reply);
check(reply.shardKeyDefinition.tenant === 'hashed', 'shardKeyDefinition', reply);
check(reply.provisionedThroughput === 400, 'provisionedThroughput', reply);

// A document without the shard key fails as on Azure (61).
let failed = null;
try {
  app.orders.insertOne({ _id: 1, n: 1 });
} catch (e) {
  failed = e;
}
check(failed !== null && failed.code === 61, 'insert without the shard key', failed && failed.message);
check(failed.message.includes('document does not contain shard key'), 'message', failed.message);
app.orders.insertOne({ _id: 1, tenant: 't1', n: 1 });
check(app.orders.countDocuments({ tenant: 't1' }) === 1, 'insert with the shard key', app.orders.find().toArray());

// A collection that does not exist (26; its reply's shape, `errMsg`, is checked by the Rust
// tests on the wire).
failed = null;
try {
  app.runCommand({ customAction: 'GetCollection', collection: 'missing' });
} catch (e) {
  failed = e;
}
check(failed !== null && failed.code === 26, 'GetCollection of a missing collection', failed && failed.message);
print('ok');
