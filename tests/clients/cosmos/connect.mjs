// The Node.js driver with a Cosmos DB connection string pasted unchanged but for host and port,
// against a plain `--compat cosmos` start: it connects over TLS (the CA trusted through the
// string's tlsCAFile or, when MAYFLY_CA_OPTION names it, the driver's tlsCAFile option) and
// writes. The emulator's string has no retrywrites=false: its first write gets Cosmos's
// refusal, as on an account without EnableMongoRetryableWrites, and the string with
// retrywrites=false writes.
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const uri = process.env.MAYFLY_URI;
const ca = process.env.MAYFLY_CA_OPTION;
const refused = process.env.MAYFLY_EXPECT_RETRYABLE_REFUSAL === '1';
const options = { serverSelectionTimeoutMS: 10000, ...(ca ? { tlsCAFile: ca } : {}) };

async function write(client) {
  const items = client.db('cosmos_connect').collection('items_node');
  await items.insertOne({ via: 'node' });
  assert.ok((await items.countDocuments({ via: 'node' })) >= 1);
  const tls = (await client.db('admin').command({ serverStatus: 1 })).transportSecurity;
  assert.ok(Number(tls['1.3']) + Number(tls['1.2']) >= 1, JSON.stringify(tls));
}

let client = new MongoClient(uri, options);
try {
  assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1);
  if (refused) {
    await assert.rejects(
      client.db('cosmos_connect').collection('items_node').insertOne({ via: 'node' }),
      (e) => e.code === 2 && e.message.includes('retrywrites=false'),
    );
  } else {
    await write(client);
  }
} finally {
  await client.close();
}
if (refused) {
  client = new MongoClient(uri + '&retrywrites=false', options);
  try {
    await write(client);
  } finally {
    await client.close();
  }
}
console.log('ok');
