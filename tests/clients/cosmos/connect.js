// mongosh with a Cosmos DB connection string pasted unchanged but for host and port, against a
// plain `--compat cosmos` start (the CA trusted through the string's tlsCAFile or mongosh's
// --tlsCAFile): it connects over TLS and writes. mongosh sends retryable writes as drivers do,
// so with the emulator's string (no retrywrites=false) the write gets Cosmos's refusal.
const refused = process.env.MAYFLY_EXPECT_RETRYABLE_REFUSAL === '1';
if (db.adminCommand({ ping: 1 }).ok !== 1) throw new Error('ping');
const items = db.getSiblingDB('cosmos_connect').items_mongosh;
if (refused) {
  let error = null;
  try {
    items.insertOne({ via: 'mongosh' });
  } catch (e) {
    error = e;
  }
  if (error === null || error.code !== 2 || !String(error.message).includes('retrywrites=false')) {
    throw new Error('expected the retryable-writes refusal, got ' + error);
  }
} else {
  items.insertOne({ via: 'mongosh' });
  if (items.countDocuments({ via: 'mongosh' }) < 1) throw new Error('count');
}
const tls = db.adminCommand({ serverStatus: 1 }).transportSecurity;
if (Number(tls['1.3']) + Number(tls['1.2']) < 1) throw new Error('not TLS: ' + EJSON.stringify(tls));
print('ok');
