// The Node.js driver connects (plain and with snappy compression) and pings.
import { MongoClient } from 'mongodb';
import assert from 'node:assert/strict';

const uri = process.env.MAYFLY_URI;
for (const options of [{}, { compressors: ['snappy'] }]) {
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, ...options });
  try {
    const ping = await client.db('admin').command({ ping: 1 });
    assert.equal(ping.ok, 1);
    const info = await client.db('admin').command({ buildInfo: 1 });
    assert.equal(info.version, '7.0.0');
    await assert.rejects(client.db('test').command({ nope: 1 }), (e) => e.code === 59);
  } finally {
    await client.close();
  }
}
console.log('ok');
