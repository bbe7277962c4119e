// mongosh connects and the basic shell commands answer.
const ping = db.runCommand({ ping: 1 });
if (ping.ok !== 1) throw new Error('ping failed: ' + EJSON.stringify(ping));
if (db.version() !== '7.0.0') throw new Error('db.version() = ' + db.version());
const hello = db.hello();
if (hello.isWritablePrimary !== true) throw new Error('hello: ' + EJSON.stringify(hello));
const status = db.serverStatus();
if (status.process !== 'mayfly' || status.connections.current < 1) throw new Error('serverStatus: ' + EJSON.stringify(status.connections));
if (!db.adminCommand({ listCommands: 1 }).commands.ping) throw new Error('listCommands lacks ping');
let threw = false;
try { db.runCommand({ noSuchCommand: 1 }); } catch (e) { threw = e.code === 59; }
if (!threw) throw new Error('unknown command did not raise 59');
// show log's command: the server's recent lines, each one of mongod's structured JSON lines.
const recent = db.adminCommand({ getLog: 'global' });
if (!recent.log.some((l) => JSON.parse(l).msg === 'waiting for connections')) {
  throw new Error('getLog global lacks the start-up line: ' + EJSON.stringify(recent.log.slice(0, 5)));
}
if (!db.adminCommand({ getLog: '*' }).names.includes('global')) throw new Error('getLog * lacks global');
// rs.status() on a standalone: mongod's 76, not a missing command.
let rsCode = null;
try { rs.status(); } catch (e) { rsCode = e.code; }
if (rsCode !== 76) throw new Error('rs.status() gave ' + rsCode + ', not 76');
print('ok');
