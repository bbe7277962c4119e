// mongosh connects with a Cosmos DB connection string, unchanged but for host and port, and runs
// CRUD as the account's user.
const status = db.adminCommand({ connectionStatus: 1 });
const users = status.authInfo.authenticatedUsers;
if (users.length !== 1 || users[0].user !== process.env.MAYFLY_ACCOUNT || users[0].db !== 'admin') {
  throw new Error('authenticated as ' + EJSON.stringify(users));
}
const items = db.getSiblingDB('cosmos_scenario').items_mongosh;
items.drop();
items.insertMany([{ _id: 'a', n: 1 }, { _id: 'b', n: 2 }, { _id: 'c', n: 3 }]);
if (items.countDocuments({ n: { $gt: 1 } }) !== 2) throw new Error('count');
items.updateOne({ _id: 'a' }, { $set: { n: 10 } });
if (items.findOne({ _id: 'a' }).n !== 10) throw new Error('update');
items.deleteOne({ _id: 'b' });
if (items.countDocuments() !== 2) throw new Error('delete');
items.drop();
print('ok');
