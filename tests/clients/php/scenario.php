<?php
// The Debian-driver scenario through PHP's MongoDB extension as Debian packages it (php-mongodb
// 1.15 on libmongoc 1.23): the steps tests/clients/debian_drivers.py lists, each
// checked. The extension is the driver's low-level half (Manager, BulkWrite, Query, Command);
// its high-level library (mongodb/mongodb, from Composer) is not packaged by Debian, so the
// collection and the TTL index are created with the commands that library would send. The
// connection string comes in MAYFLY_URI. Prints "ok" when every check passed; a failure throws
// (exit code 255).

use MongoDB\Driver\BulkWrite;
use MongoDB\Driver\Command;
use MongoDB\Driver\Exception\BulkWriteException;
use MongoDB\Driver\Manager;
use MongoDB\Driver\Query;

function check(bool $condition, string $what): void
{
    if (!$condition) {
        throw new RuntimeException("check failed: $what");
    }
}

$manager = new Manager(getenv('MAYFLY_URI'));
$command = fn (string $db, array $cmd) => $manager->executeCommand($db, new Command($cmd))->toArray()[0];
$admin = fn (array $cmd) => $command('admin', $cmd);
$find = fn (string $ns, array $filter = [], array $options = []) =>
    $manager->executeQuery($ns, new Query($filter, $options))->toArray();
$write = function (string $ns, callable $build) use ($manager) {
    $bulk = new BulkWrite();
    $build($bulk);
    return $manager->executeBulkWrite($ns, $bulk);
};
$ids = fn (string $ns) => array_map(fn ($d) => $d->_id, $find($ns, [], ['sort' => ['_id' => 1]]));

$command('drivers_php', ['dropDatabase' => 1]);

// CRUD, on a collection created with `create`.
$command('drivers_php', ['create' => 'items']);
$items = 'drivers_php.items';
$write($items, fn ($b) => $b->insert(['_id' => 1, 'name' => 'one']));
check($find($items, ['_id' => 1])[0]->name === 'one', 'find one');
$r = $write($items, fn ($b) => $b->update(['_id' => 1], ['$set' => ['name' => 'uno']]));
check($r->getMatchedCount() === 1 && $r->getModifiedCount() === 1, 'update');
check($find($items, ['_id' => 1])[0]->name === 'uno', 'updated');
$r = $write($items, fn ($b) => $b->delete(['_id' => 1], ['limit' => 1]));
check($r->getDeletedCount() === 1, 'delete');
check($command('drivers_php', ['count' => 'items'])->n === 0, 'empty after delete');

// A cursor over 1,000 documents in batches of 50.
$write($items, function ($b) {
    for ($i = 0; $i < 1000; $i++) {
        $b->insert(['_id' => $i, 'n' => $i, 'parity' => $i % 2]);
    }
});
$seen = 0;
$cursor = $manager->executeQuery($items, new Query([], ['sort' => ['_id' => 1], 'batchSize' => 50]));
foreach ($cursor as $d) {
    check($d->_id === $seen, "cursor order at $seen");
    $seen++;
}
check($seen === 1000, "cursor saw $seen");

// An upsert, then the same update matching the upserted document.
$upsert = fn ($b) => $b->update(['_id' => 'u'], ['$set' => ['v' => 1]], ['upsert' => true]);
$r = $write($items, $upsert);
check($r->getUpsertedCount() === 1 && $r->getUpsertedIds()[0] === 'u' && $r->getMatchedCount() === 0, 'upsert');
$r = $write($items, $upsert);
check($r->getUpsertedCount() === 0 && $r->getMatchedCount() === 1, 'matched');

// aggregate: $match + $group.
$groups = $manager->executeCommand('drivers_php', new Command([
    'aggregate' => 'items',
    'pipeline' => [
        ['$match' => ['n' => ['$gte' => 500]]],
        ['$group' => ['_id' => '$parity', 'count' => ['$sum' => 1]]],
        ['$sort' => ['_id' => 1]],
    ],
    'cursor' => new stdClass(),
]))->toArray();
check(json_encode($groups) === '[{"_id":0,"count":250},{"_id":1,"count":250}]', json_encode($groups));

// The _ts TTL index, a document's own ttl, exact expiry.
$admin(['reaper' => 'pause']);
$admin(['reaper' => 'runOnce']);
$command('drivers_php', ['createIndexes' => 'expiring', 'indexes' => [
    ['key' => ['_ts' => 1], 'name' => '_ts_1', 'expireAfterSeconds' => 10],
]]);
$indexes = $manager->executeCommand('drivers_php', new Command(['listIndexes' => 'expiring']))->toArray();
$shown = array_filter($indexes, fn ($i) => $i->name === '_ts_1' && $i->expireAfterSeconds === 10);
check(count($shown) === 1, 'listIndexes shows _ts_1 with expireAfterSeconds 10: ' . json_encode($indexes));
$expiring = 'drivers_php.expiring';
$write($expiring, function ($b) {
    $b->insert(['_id' => 'default']);
    // A PHP integer that fits 32 bits is sent as Int32 (MongoDB\BSON\Int64 is constructible
    // only from 1.16 on).
    $b->insert(['_id' => 'own', 'ttl' => 20]);
    $b->insert(['_id' => 'never', 'ttl' => -1]);
});
$admin(['advanceClock' => 9]);
check($ids($expiring) === ['default', 'never', 'own'], 'all three at T+9: ' . json_encode($ids($expiring)));
$admin(['advanceClock' => 1]);
check($ids($expiring) === ['never', 'own'], 'T+10: ' . json_encode($ids($expiring)));
$admin(['advanceClock' => 10]);
check($ids($expiring) === ['never'], 'T+20: ' . json_encode($ids($expiring)));
check($admin(['reaper' => 'runOnce'])->reaped == 2, 'reaped 2');
$admin(['reaper' => 'resume']);

// A duplicate key, with its code.
try {
    $write($items, fn ($b) => $b->insert(['_id' => 7]));
    throw new RuntimeException('duplicate _id accepted');
} catch (BulkWriteException $e) {
    $errors = $e->getWriteResult()->getWriteErrors();
    check(count($errors) === 1 && $errors[0]->getCode() === 11000, 'duplicate key code');
}

echo "ok\n";
