// The Node.js driver against `--compat cosmos --cosmos-version 3.6`: this driver is newer than
// a 3.6 account (wire version 6), and it refuses to connect with its own wire-version error,
// as it does against such an account on Azure.
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const client = new MongoClient(process.env.MAYFLY_URI, { serverSelectionTimeoutMS: 3000 });
try {
  await assert.rejects(client.db('cosmos_scenario').command({ ping: 1 }), (e) => {
    assert.match(
      e.message,
      /reports maximum wire version 6, but this version of the Node\.js Driver requires at least \d+ \(MongoDB \d\.\d\)/,
    );
    return true;
  });
} finally {
  await client.close();
}
console.log('ok');
