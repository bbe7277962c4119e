// An aggregation a report would run, through mongosh: $lookup + $unwind + $group + $project with
// date and string expressions, then a case-insensitive (strength 2) index serving a collated
// find, which explain shows as an IXSCAN with the collation.
function str(x) {
  return EJSON.stringify(x, { relaxed: false });
}
function check(cond, what) {
  if (!cond) throw new Error('check failed: ' + what);
}

const d = db.getSiblingDB('mongosh_aggregate');
d.dropDatabase();
d.customers.insertMany([
  { _id: 1, name: 'ann lee', city: 'Lisbon' },
  { _id: 2, name: 'bob ray', city: 'Osaka' },
]);
d.orders.insertMany([
  { _id: 10, customer: 1, total: 20, at: ISODate('2024-03-05T10:00:00Z') },
  { _id: 11, customer: 1, total: 5, at: ISODate('2024-03-20T23:30:00Z') },
  { _id: 12, customer: 2, total: 7, at: ISODate('2024-04-01T08:00:00Z') },
]);
d.customers.createIndex({ _id: 1, city: 1 });

const report = d.orders.aggregate([
  { $lookup: { from: 'customers', localField: 'customer', foreignField: '_id', as: 'who' } },
  { $unwind: '$who' },
  {
    $group: {
      _id: { name: '$who.name', month: { $dateToString: { date: '$at', format: '%Y-%m' } } },
      spent: { $sum: '$total' },
      orders: { $sum: 1 },
      last: { $max: '$at' },
    },
  },
  {
    $project: {
      _id: 0,
      customer: { $toUpper: { $substrCP: ['$_id.name', 0, 1] } },
      label: { $concat: [{ $toUpper: '$_id.name' }, ' / ', '$_id.month'] },
      spent: 1,
      average: { $round: [{ $divide: ['$spent', '$orders'] }, 2] },
      lastDay: { $dayOfMonth: { date: '$last', timezone: 'Asia/Tokyo' } },
      big: { $cond: [{ $gte: ['$spent', 10] }, 'yes', 'no'] },
    },
  },
  { $sort: { label: 1 } },
]).toArray();
printjson(report);
check(report.length === 2, 'two groups: ' + str(report));
check(report[0].label === 'ANN LEE / 2024-03', 'label of the first group: ' + str(report[0]));
check(report[0].customer === 'A', 'first letter: ' + str(report[0]));
check(report[0].spent === 25 && report[0].average === 12.5, 'sum and average: ' + str(report[0]));
// 23:30 UTC on the 20th is the 21st in Tokyo.
check(report[0].lastDay === 21, 'day in Tokyo: ' + str(report[0]));
check(report[0].big === 'yes' && report[1].big === 'no', '$cond: ' + str(report));

// A strength-2 collation index serves a case-insensitive find.
d.people.insertMany([{ name: 'Zoë' }, { name: 'ZOË' }, { name: 'zoe' }, { name: 'Ann' }]);
d.people.createIndex({ name: 1 }, { name: 'name_ci', collation: { locale: 'en', strength: 2 } });
const ci = { locale: 'en', strength: 2 };
const found = d.people.find({ name: 'zoë' }).collation(ci).toArray();
check(found.length === 2, 'strength 2 ignores case, not accents: ' + str(found));
const plan = d.people.find({ name: 'zoë' }).collation(ci).explain().queryPlanner.winningPlan;
check(str(plan).includes('"IXSCAN"') && str(plan).includes('name_ci'), 'collated find uses the collated index: ' + str(plan));
const plain = d.people.find({ name: 'zoë' }).explain().queryPlanner.winningPlan;
check(!str(plain).includes('name_ci'), 'a find without the collation does not: ' + str(plain));
d.dropDatabase();
print('ok');
