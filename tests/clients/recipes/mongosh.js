// The _ts TTL index and per-document ttl in mongosh (docs/ttl-recipes.md shows the recipe part).
db = db.getSiblingDB('recipes_mongosh');
db.dropDatabase();
db.adminCommand({ reaper: 'pause' });
db.adminCommand({ reaper: 'runOnce' });
// recipe:start
// Every document expires an hour after its last write...
db.sessions.createIndex({ _ts: 1 }, { expireAfterSeconds: 3600 });
db.sessions.insertOne({ _id: 'default', user: 'ada' });
// ...unless it says otherwise: a minute for this one, never for that one.
db.sessions.insertOne({ _id: 'short', user: 'alan', ttl: 60 });
db.sessions.insertOne({ _id: 'forever', user: 'grace', ttl: -1 });
// recipe:end
const ids = () => db.sessions.find().sort({ _id: 1 }).toArray().map((d) => d._id).join(',');
const check = (cond, what) => { if (!cond) throw new Error(what + ': ' + ids()); };
db.adminCommand({ advanceClock: 60 });
check(ids() === 'default,forever', 'the one-minute document is gone after a minute');
db.adminCommand({ advanceClock: 3540 });
check(ids() === 'forever', 'the default expires after an hour');
db.adminCommand({ reaper: 'resume' });
