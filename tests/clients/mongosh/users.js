// User management through mongosh's shell helpers (access control off, as the scenario server
// runs): db.createUser, db.getUsers / show users, db.getUser, grantRolesToUser, updateUser,
// dropUser, dropAllUsers, and the server's errors as mongosh reports them.
function str(x) {
  return EJSON.stringify(x, { relaxed: false });
}
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}
function eq(actual, expected, what) {
  if (str(actual) !== str(expected)) {
    throw new Error(what + ': expected ' + str(expected) + ', got ' + str(actual));
  }
}

const d = db.getSiblingDB('mongosh_users');
d.dropAllUsers();
d.createUser({ user: 'alice', pwd: 'secret', roles: ['readWrite'], customData: { team: 'blue' } });
const users = d.getUsers().users;
eq(users.map((u) => u._id), ['mongosh_users.alice'], 'getUsers ids');
eq(users[0].roles, [{ role: 'readWrite', db: 'mongosh_users' }], 'roles');
eq(users[0].mechanisms, ['SCRAM-SHA-1', 'SCRAM-SHA-256'], 'mechanisms');
eq(d.getUser('alice').customData, { team: 'blue' }, 'customData');
check(d.getUser('nobody') === null, 'getUser of a missing user is null');

d.grantRolesToUser('alice', ['dbAdmin']);
eq(d.getUser('alice').roles.map((r) => r.role), ['readWrite', 'dbAdmin'], 'granted');
d.revokeRolesFromUser('alice', ['readWrite']);
d.updateUser('alice', { customData: { team: 'red' } });
const alice = d.getUser('alice');
eq(alice.roles.map((r) => r.role), ['dbAdmin'], 'revoked');
eq(alice.customData, { team: 'red' }, 'updated customData');

let code = null;
try {
  d.createUser({ user: 'alice', pwd: 'x', roles: [] });
} catch (e) {
  code = e.code;
}
eq(code, 51003, 'duplicate user');
code = null;
try {
  d.createUser({ user: 'bob', pwd: 'x', roles: ['superuser'] });
} catch (e) {
  code = e.code;
}
eq(code, 31, 'unknown role');

d.dropUser('alice');
check(d.getUser('alice') === null, 'dropped');
d.createUser({ user: 'a', pwd: 'x', roles: [] });
d.createUser({ user: 'b', pwd: 'x', roles: [] });
eq(d.dropAllUsers().n, 2, 'dropAllUsers count');
eq(d.getUsers().users, [], 'no users left');
print('users: ok');
