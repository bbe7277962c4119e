"""Crash-loop durability check: every acknowledged write survives SIGKILL.

Usage: python3 scripts/crash_loop.py PATH/TO/mayfly [--cycles N] [--clients N] [--seed N]
       [--min-run SECONDS] [--max-run SECONDS]
(run it with a Python that has pymongo, e.g. tests/clients/.venv/bin/python)

Each cycle starts the server on the same data directory, checks that what it holds is exactly
what the clients' ledgers allow, then runs a mixed load (single inserts, updates, replacements,
deletes, and ordered bulk writes) from several client threads and kills the server with
SIGKILL at a random moment. A last start after the last cycle checks the final kill too.

The expected state is exact because each client owns its keys and writes a fresh version
number with every operation: after an acknowledgement the ledger knows the one state of each
key the operation touched (a document with that version, or none). An operation that was in
flight at the kill (sent, never acknowledged) may or may not have applied, so for its keys both
the state before and the state after are allowed, and the check after the restart settles which
one it was. Anything else -- an acknowledged write missing or rolled back, a document no client
wrote, a server that does not start -- is a loss. Prints the cycles, the operations
acknowledged and the losses, and exits 1 on any loss.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time

from pymongo import DeleteOne, InsertOne, MongoClient, ReplaceOne, UpdateOne
from pymongo.errors import ConnectionFailure, PyMongoError

KEYS_PER_CLIENT = 40
COLLECTION = "ledger"
DATABASE = "crashloop"
ABSENT = None


def start_server(binary, dbpath, log_path):
    # Only this start's lines count: the log holds every earlier cycle's too.
    seen = os.path.getsize(log_path) if os.path.exists(log_path) else 0
    log = open(log_path, "a")
    proc = subprocess.Popen(
        [binary, "--port", "0", "--dbpath", dbpath, "--log-format", "json"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(log_path) as f:
            f.seek(seen)
            for line in f:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("id") == 23016:  # mongod's "Waiting for connections"
                    return proc, int(event["attr"]["port"])
        if proc.poll() is not None:
            return None, None
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    return None, None


class Client:
    """One load thread: the keys it owns and, per key, the states the server may hold."""

    def __init__(self, index, seed):
        self.index = index
        self.rng = random.Random(seed * 1000 + index)
        self.keys = [f"c{index}-k{k}" for k in range(KEYS_PER_CLIENT)]
        # key -> list of allowed states; a state is a version number or ABSENT.
        self.allowed = {key: [ABSENT] for key in self.keys}
        self.version = 0
        self.acknowledged = 0
        self.in_flight = 0
        # Acknowledged writes that did not find what the ledger says is stored.
        self.problems = []

    def current(self, key):
        # Settled after every check and every acknowledgement: exactly one state.
        return self.allowed[key][0]

    def next_version(self):
        self.version += 1
        return self.version

    def plan(self, key):
        """One write on `key`: (kind, document or update, state after it)."""
        v = self.next_version()
        if self.current(key) is ABSENT:
            pad = "x" * self.rng.randint(0, 300)
            return "insert", {"_id": key, "v": v, "owner": self.index, "pad": pad}, v
        choice = self.rng.random()
        if choice < 0.4:
            return "update", {"$set": {"v": v}, "$inc": {"n": 1}}, v
        if choice < 0.7:
            return "replace", {"v": v, "owner": self.index, "replaced": True}, v
        return "delete", None, ABSENT

    def run(self, port, stop):
        client = MongoClient(
            f"mongodb://127.0.0.1:{port}/",
            retryWrites=False,
            serverSelectionTimeoutMS=3000,
            connectTimeoutMS=3000,
            socketTimeoutMS=10000,
        )
        coll = client[DATABASE][COLLECTION]
        try:
            while not stop.is_set():
                keys = self.rng.sample(self.keys, self.rng.choice([1, 1, 1, 4]))
                planned = [(key, *self.plan(key)) for key in keys]
                try:
                    if len(planned) == 1:
                        key, kind, body, _ = planned[0]
                        problem = execute_one(coll, key, kind, body)
                    else:
                        requests = [bulk_request(key, kind, body) for key, kind, body, _ in planned]
                        result = coll.bulk_write(requests, ordered=True)
                        n = result.inserted_count + result.matched_count + result.deleted_count
                        problem = None if n == len(planned) else f"bulk write {keys} applied {n} of {len(planned)}"
                except ConnectionFailure:
                    # Never acknowledged: each key may hold its old or its new state.
                    for key, _, _, after in planned:
                        self.allowed[key] = [self.current(key), after]
                    self.in_flight += 1
                    return
                except PyMongoError as e:
                    # The server answered with an error the ledger says cannot happen.
                    self.problems.append(f"{keys}: {e}")
                    for key, _, _, after in planned:
                        self.allowed[key] = [self.current(key), after]
                    continue
                if problem:
                    self.problems.append(problem)
                for key, _, _, after in planned:
                    self.allowed[key] = [after]
                self.acknowledged += 1
        finally:
            client.close()

def bulk_request(key, kind, body):
    if kind == "insert":
        return InsertOne(body)
    if kind == "update":
        return UpdateOne({"_id": key}, body)
    if kind == "replace":
        return ReplaceOne({"_id": key}, body)
    return DeleteOne({"_id": key})


def execute_one(coll, key, kind, body):
    """The single-document methods, as applications call them. Returns a problem, or None."""
    if kind == "insert":
        coll.insert_one(body)
        return None
    if kind == "update":
        n = coll.update_one({"_id": key}, body).matched_count
    elif kind == "replace":
        n = coll.replace_one({"_id": key}, body).matched_count
    else:
        n = coll.delete_one({"_id": key}).deleted_count
    return None if n == 1 else f"{key}: {kind} of a document the ledger holds found none"


def check(port, clients):
    """Compares the server's documents with the ledgers; settles in-flight keys. Returns losses."""
    losses = [p for client in clients for p in client.problems]
    for client in clients:
        client.problems = []
    with MongoClient(f"mongodb://127.0.0.1:{port}/", serverSelectionTimeoutMS=10000) as mc:
        stored = {doc["_id"]: doc.get("v") for doc in mc[DATABASE][COLLECTION].find({}, {"v": 1})}
    owners = {key: client for client in clients for key in client.keys}
    for key in stored:
        if key not in owners:
            losses.append(f"{key}: a document no client wrote")
    for client in clients:
        for key in client.keys:
            actual = stored.get(key, ABSENT)
            if actual not in client.allowed[key]:
                losses.append(f"{key}: stored {actual!r}, allowed {client.allowed[key]!r}")
            client.allowed[key] = [actual]
    return losses


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("binary")
    parser.add_argument("--cycles", type=int, default=10)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--min-run", type=float, default=0.3, help="shortest load before the kill, seconds")
    parser.add_argument("--max-run", type=float, default=2.0, help="longest load before the kill, seconds")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    clients = [Client(i, args.seed) for i in range(args.clients)]
    workdir = tempfile.mkdtemp(prefix="mayfly-crash-loop-")
    dbpath = os.path.join(workdir, "data")
    log_path = os.path.join(workdir, "server.log")
    print(f"crash loop: {args.cycles} cycles, {args.clients} clients, seed {args.seed}, data in {dbpath}")

    losses = []
    started = time.time()
    cycle = 0
    for cycle in range(1, args.cycles + 2):
        proc, port = start_server(args.binary, dbpath, log_path)
        if proc is None:
            losses.append(f"cycle {cycle}: the server did not start after a kill (log: {log_path})")
            break
        try:
            found = check(port, clients)
        except PyMongoError as e:
            found = [f"cycle {cycle}: reading the data back failed: {e}"]
        losses.extend(f"cycle {cycle}: {loss}" for loss in found)
        if found or cycle > args.cycles:
            proc.kill()
            proc.wait()
            break
        stop = threading.Event()
        threads = [threading.Thread(target=c.run, args=(port, stop)) for c in clients]
        for t in threads:
            t.start()
        time.sleep(rng.uniform(args.min_run, args.max_run))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        stop.set()
        for t in threads:
            t.join()
        acked = sum(c.acknowledged for c in clients)
        print(f"cycle {cycle}: killed; {acked} operations acknowledged so far", flush=True)

    cycles = min(cycle, args.cycles)
    acked = sum(c.acknowledged for c in clients)
    in_flight = sum(c.in_flight for c in clients)
    print(
        f"crash loop: {cycles} cycles, {acked} operations acknowledged, "
        f"{in_flight} in flight at a kill, losses: {len(losses)} ({time.time() - started:.0f}s)"
    )
    for loss in losses[:50]:
        print(f"LOSS {loss}")
    if losses:
        print(f"server log: {log_path}")
        sys.exit(1)
    subprocess.run(["rm", "-rf", workdir], check=False)


if __name__ == "__main__":
    main()
