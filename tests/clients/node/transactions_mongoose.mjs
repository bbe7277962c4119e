// Transactions through Mongoose (`session.withTransaction`) against a replica set: a transfer
// between two models commits atomically; a callback that throws leaves nothing behind.
import mongoose from 'mongoose';
import assert from 'node:assert/strict';

const Account = mongoose.model('Account', new mongoose.Schema({ _id: String, balance: Number }));
const Entry = mongoose.model('Entry', new mongoose.Schema({ _id: String, amount: Number }));

await mongoose.connect(process.env.MAYFLY_URI, { dbName: 'mongoose_txn', serverSelectionTimeoutMS: 5000 });
try {
  await mongoose.connection.db.dropDatabase();
  await Account.createCollection();
  await Entry.createCollection();
  await Account.create([{ _id: 'alice', balance: 100 }, { _id: 'bob', balance: 0 }]);

  const session = await mongoose.startSession();
  await session.withTransaction(async () => {
    await Account.updateOne({ _id: 'alice' }, { $inc: { balance: -40 } }, { session });
    await Account.updateOne({ _id: 'bob' }, { $inc: { balance: 40 } }, { session });
    await Entry.create([{ _id: 't1', amount: 40 }], { session });
    // Outside the transaction nothing has happened yet.
    assert.equal((await Account.findById('bob').lean()).balance, 0);
  });
  assert.equal((await Account.findById('alice').lean()).balance, 60);
  assert.equal((await Account.findById('bob').lean()).balance, 40);
  assert.equal(await Entry.countDocuments(), 1);

  await assert.rejects(
    session.withTransaction(async () => {
      await Entry.create([{ _id: 't2', amount: 1 }], { session });
      throw new Error('refused');
    }),
    /refused/,
  );
  assert.equal(await Entry.findById('t2'), null);
  await session.endSession();
} finally {
  await mongoose.disconnect();
}
