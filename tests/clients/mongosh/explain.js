// The planner through mongosh's helpers: find().explain() picks the index (FETCH over IXSCAN)
// and examines only what it returns, explain().aggregate() shows the same index scan, an index
// that gives the sort order leaves no SORT stage, and the operation helpers answer.
function str(x) {
  return EJSON.stringify(x, { relaxed: false });
}
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

const d = db.getSiblingDB('mongosh_explain');
d.dropDatabase();
const c = d.c;
c.createIndex({ field: 1 });
c.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, field: i % 20, other: i })));

// find().explain('executionStats'): FETCH <- IXSCAN on field_1, nothing examined in vain.
const found = c.find({ field: 7 }).explain('executionStats');
const plan = found.queryPlanner.winningPlan;
check(plan.stage === 'FETCH', 'winning plan is a FETCH: ' + str(plan));
check(plan.inputStage.stage === 'IXSCAN', 'FETCH reads an IXSCAN: ' + str(plan));
check(plan.inputStage.indexName === 'field_1', 'IXSCAN uses field_1: ' + str(plan));
const stats = found.executionStats;
check(Number(stats.nReturned) === 10, 'nReturned 10: ' + str(stats));
check(Number(stats.nReturned) === Number(stats.totalDocsExamined), 'nReturned == totalDocsExamined: ' + str(stats));

// explain().aggregate() with a leading $match uses the same index.
const agg = c.explain().aggregate([{ $match: { field: 7 } }]);
printjson(agg);
check(str(agg).includes('"IXSCAN"'), 'aggregate explain shows an IXSCAN: ' + str(agg));

// An index in the sort's order (walked backwards) needs no SORT stage.
const sorted = c.find({}).sort({ field: -1 }).limit(3).explain();
const stages = [];
for (let s = sorted.queryPlanner.winningPlan; s; s = s.inputStage) stages.push(s.stage);
check(!stages.includes('SORT'), 'sort by an indexed field has no SORT stage: ' + stages.join(' <- '));
check(stages.includes('IXSCAN'), 'sort by an indexed field scans the index: ' + stages.join(' <- '));
check(c.find({}).sort({ field: -1 }).limit(3).toArray().every((x) => x.field === 19), 'sorted result');

// Operation helpers. mongosh's db.currentOp() runs the $currentOp aggregation stage, which
// lists at least itself.
const ops = db.currentOp();
check(ops.ok === 1 && Array.isArray(ops.inprog) && ops.inprog.length >= 1, 'db.currentOp(): ' + str(ops));
const plain = db.adminCommand({ currentOp: 1 });
check(plain.ok === 1 && Array.isArray(plain.inprog), 'currentOp: ' + str(plain));
const killed = db.killOp(12345);
check(killed.ok === 1, 'db.killOp(12345): ' + str(killed));

d.dropDatabase();
print('ok');
