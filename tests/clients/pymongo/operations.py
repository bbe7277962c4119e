"""pymongo and long operations: pings stay prompt and the server stays selectable while other
connections run long commands; maxTimeMS raises ExecutionTimeout; currentOp lists a running
operation and killOp stops it. The `sleep` test command stands in for a slow scan."""
import os
import threading
import time

import pymongo
from pymongo.errors import ExecutionTimeout, OperationFailure

uri = os.environ["MAYFLY_URI"]
client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000, heartbeatFrequencyMS=500)
busy = pymongo.MongoClient(uri, serverSelectionTimeoutMS=5000, maxPoolSize=8)
try:
    client.admin.command("ping")
    failures = []

    def sleep_long():
        try:
            busy.admin.command("sleep", 1, millis=20_000)
            failures.append("the sleep was not killed")
        except OperationFailure as e:
            if e.code != 11601:
                failures.append(f"unexpected error {e.code}: {e}")

    sleepers = [threading.Thread(target=sleep_long) for _ in range(4)]
    for t in sleepers:
        t.start()

    def sleeping_ops():
        ops = client.admin.command("currentOp", 1, **{"command.sleep": {"$exists": True}})
        return ops["inprog"]

    deadline = time.time() + 5
    while len(sleeping_ops()) < 4:
        assert time.time() < deadline, "the sleeps never showed in currentOp"
        time.sleep(0.05)

    # Several heartbeats pass while the sleeps run: the server must stay known and fast.
    slowest = 0.0
    end = time.time() + 2
    while time.time() < end:
        start = time.time()
        assert client.admin.command("ping")["ok"] == 1.0
        slowest = max(slowest, time.time() - start)
        time.sleep(0.05)
    assert slowest < 0.5, f"slowest ping {slowest:.3f}s"
    server = client.topology_description.server_descriptions()[client.address]
    assert server.server_type != pymongo.server_type.SERVER_TYPE.Unknown, server

    for op in sleeping_ops():
        reply = client.admin.command("killOp", 1, op=op["opid"])
        assert reply["info"] == "attempting to kill op", reply
    for t in sleepers:
        t.join(10)
    assert not failures, failures
    assert sleeping_ops() == []

    try:
        client.admin.command("sleep", 1, millis=20_000, maxTimeMS=100)
        raise AssertionError("maxTimeMS did not stop the sleep")
    except ExecutionTimeout as e:
        assert e.code == 50, e

    coll = client.test.operations
    coll.drop()
    coll.insert_many([{"_id": i} for i in range(300)])
    assert len(list(coll.find().max_time_ms(60_000).batch_size(50))) == 300
finally:
    client.close()
    busy.close()
print("ok")
