#!/usr/bin/env python3
"""Resource fuzzer: random costly requests against a server under a memory limit and maxTimeMS.

Usage: python3 scripts/resource_fuzz.py [PATH/TO/mayfly] [--seconds N] [--seed N] [--clients N]
       [--memory-limit-mb MB] [--cgroup-mb MB] [--storage memory|disk] [--no-kill]
       [--replay CLIENT:INDEX]
(run it with a Python that has pymongo, e.g. tests/clients/.venv/bin/python; the binary
defaults to target/debug/mayfly)

Starts the server with `--memoryLimitMB` and, where this machine lets it, inside a real memory
limit: a cgroup v2 child with memory.max, else a cgroup v1 child with memory.limit_in_bytes
(both MEMORY-LIMIT-MB plus half, `--cgroup-mb`), else no limit and only VmRSS/VmHWM watched
through /proc; the output says which. It loads a small data set, then several client threads
send requests built from a grammar by a seeded generator -- aggregation pipelines whose
expressions grow values ($concat, $concatArrays, $reduce, $map, $range, $split, $replaceAll,
$zip, $setField, $regexFindAll, nested and doubling) and whose stages multiply documents
($unwind, $group with $push, $sort on many keys, $densify, $bucketAuto, $facet, $lookup and
$graphLookup on the same collection, $setWindowFields), finds and counts whose filters fan out
($or and $in with thousands of clauses on indexed and unindexed fields, $expr), and update
pipelines -- each with a random maxTimeMS from 50 to 2000 ms. Another thread kills a running
operation now and then (killOp) and another pings the server throughout.

The run fails when:
  - the server process dies (killed for memory by the cgroup, or crashed);
  - a request fails with an error that signals a server bug (1 InternalError, 8 UnknownError,
    no code) or its connection closes or times out;
  - a request's latency seen by the client (time.monotonic around the command) exceeds its
    maxTimeMS by more than a second;
  - a ping takes more than 2 s.
Any other error code outside the allowed set (the resource errors and the usual answers to
invalid input) is listed with an example, for a person to judge, but does not fail the run.

Every request is rebuilt from (seed, client, index): `--replay C:I` prints the request and runs
it alone against a fresh server, which is how a failure becomes a reproducer.
Ends with `resource-fuzz: N passed, N failed`, where passed counts requests within bounds.
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
from collections import Counter

import bson
from bson import json_util
from bson.son import SON
from pymongo import MongoClient
from pymongo.errors import (
    AutoReconnect,
    ConnectionFailure,
    DocumentTooLarge,
    InvalidOperation,
    OperationFailure,
    PyMongoError,
)

DB = "fuzz"
DOCS = 3000
SLACK_MS = 1000
PING_LIMIT_S = 2.0

# Errors a request may end with: the resource errors (time, interrupt, memory, value and
# document sizes) and the ordinary answers to input that is invalid (bad value, type mismatch,
# failed to parse, overflow, ...).
ALLOWED = {
    50: "MaxTimeMSExpired",
    11601: "Interrupted",
    146: "ExceededMemoryLimit",
    292: "QueryExceededMemoryLimitNoDiskUseAllowed",
    10334: "BSONObjectTooLarge",
    16493: "string longer than 16MB",
    15: "Overflow",
    2: "BadValue",
    9: "FailedToParse",
    14: "TypeMismatch",
    28: "PathNotViable",
    168: "InvalidPipelineOperator",
    5897900: "densify: too many documents",
    51151: "regexFindAll: too much memory",
    17419: "update: resulting document too large",
    4568: "$graphLookup: too much memory",
    40099: "$graphLookup: too much memory",
}
# Errors that mean the server, not the request, is at fault.
BUG_CODES = {1: "InternalError", 8: "UnknownError"}

STRINGS = ["", "x", "ab", "héllo", "xxxxxxxxxxxxxxxx", "a.b.c", "0123456789" * 10]
FIELDS_NUM = ["$a", "$b", "$grp", "$x"]
SMALL = [0, 1, 2, 3, 7, 10, 100]


def big(rng):
    return rng.choice([10, 100, 1000, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000])


class Gen:
    """The grammar: each method returns a random value of one kind, `depth` bounding nesting."""

    def __init__(self, rng):
        self.rng = rng

    def pick(self, *options):
        return self.rng.choice(options)(self) if callable(options[0]) else self.rng.choice(options)

    # -- expressions -------------------------------------------------------------------------
    def expr(self, depth, kind=None):
        kind = kind or self.rng.choice(["str", "arr", "doc", "num", "bool"])
        return getattr(self, kind)(max(depth, 0))

    def str(self, d):
        r = self.rng
        leaves = [lambda: r.choice(STRINGS), lambda: "$s", lambda: {"$toString": "$a"}]
        if d <= 0 or r.random() < 0.15:
            return r.choice(leaves)()
        c = r.randrange(9)
        if c == 0:
            return {"$concat": [self.str(d - 1) for _ in range(r.randint(1, 4))]}
        if c == 1:  # doubling: 2^k times the seed
            return {"$reduce": {"input": {"$range": [0, r.randint(4, 30)]},
                                "initialValue": self.str(d - 1),
                                "in": {"$concat": ["$$value", "$$value"]}}}
        if c == 2:  # linear growth
            return {"$reduce": {"input": {"$range": [0, big(r)]}, "initialValue": "",
                                "in": {"$concat": ["$$value", self.str(d - 1)]}}}
        if c == 3:
            op = r.choice(["$replaceAll", "$replaceOne"])
            return {op: {"input": self.str(d - 1), "find": r.choice(["x", "a", "0", ""]),
                         "replacement": self.str(d - 1)}}
        if c == 4:
            return {"$let": {"vars": {"v": self.str(d - 1)},
                             "in": {"$concat": ["$$v", "$$v", "$$v", "$$v"]}}}
        if c == 5:
            if r.random() < 0.3:
                return {"$trim": {"input": self.str(d - 1)}}
            return {r.choice(["$toUpper", "$toLower"]): [self.str(d - 1)]}
        if c == 6:
            return {"$substrCP": [self.str(d - 1), 0, r.choice([1, 100, 10_000_000])]}
        if c == 7:
            return {"$toString": self.num(d - 1)}
        return {"$reduce": {"input": self.arr(d - 1), "initialValue": "",
                            "in": {"$concat": ["$$value", {"$toString": "$$this"}]}}}

    def arr(self, d):
        r = self.rng
        leaves = [lambda: "$arr", lambda: "$tags", lambda: [r.choice(SMALL) for _ in range(r.randint(0, 5))],
                  lambda: {"$range": [0, r.choice([10, 1000])]}]
        if d <= 0 or r.random() < 0.15:
            return r.choice(leaves)()
        c = r.randrange(14)
        if c == 0:
            return {"$range": [r.choice([0, -big(r)]), big(r), r.choice([1, 1, 2, 1000])]}
        if c == 1:
            return {"$concatArrays": [self.arr(d - 1) for _ in range(r.randint(1, 4))]}
        if c == 2:  # doubling
            return {"$reduce": {"input": {"$range": [0, r.randint(4, 30)]},
                                "initialValue": self.arr(d - 1),
                                "in": {"$concatArrays": ["$$value", "$$value"]}}}
        if c == 3:
            return {"$map": {"input": self.arr(d - 1), "as": "e", "in": self.expr(d - 1)}}
        if c == 4:  # quadratic
            return {"$map": {"input": {"$range": [0, big(r)]},
                             "in": {"$range": [0, r.choice([10, 1000, 100_000])]}}}
        if c == 5:
            return {"$split": [self.str(d - 1), r.choice(["x", "a", " ", "0", "ab"])]}
        if c == 6:
            inputs = [self.arr(d - 1) for _ in range(r.randint(1, 3))]
            z = {"inputs": inputs}
            if r.random() < 0.5:
                z["useLongestLength"] = True
                z["defaults"] = [self.expr(0) for _ in inputs]
            return {"$zip": z}
        if c == 7:
            return {"$map": {"input": {"$regexFindAll": {"input": self.str(d - 1),
                                                         "regex": r.choice([".", "x*", "(.)(.)", "a|x", ""])}},
                             "in": "$$this.match"}}
        if c == 8:
            return {"$filter": {"input": self.arr(d - 1), "cond": self.bool(d - 1)}}
        if c == 9:
            return {r.choice(["$setUnion", "$setIntersection", "$setDifference"]):
                    [self.arr(d - 1), self.arr(d - 1)]}
        if c == 10:
            return {"$reverseArray": [self.arr(d - 1)]}
        if c == 11:
            return {"$sortArray": {"input": self.arr(d - 1), "sortBy": r.choice([1, -1])}}
        if c == 12:
            return {"$objectToArray": [self.doc(d - 1)]}
        return [self.expr(d - 1) for _ in range(r.randint(1, 4))]

    def doc(self, d):
        r = self.rng
        leaves = [lambda: "$$ROOT", lambda: {"k": "$s"}, lambda: "$sub"]
        if d <= 0 or r.random() < 0.15:
            return r.choice(leaves)()
        c = r.randrange(6)
        if c == 0:
            return {"$setField": {"field": r.choice(["f", "a", "g"]),
                                  "input": self.doc(d - 1), "value": self.expr(d - 1)}}
        if c == 1:  # doubling, nested
            return {"$reduce": {"input": {"$range": [0, r.randint(4, 26)]}, "initialValue": self.doc(d - 1),
                                "in": {"$setField": {"field": "d", "input": "$$value",
                                                     "value": "$$value"}}}}
        if c == 2:
            return {"$arrayToObject": {"$map": {"input": {"$range": [0, big(r)]},
                                                "in": [{"$toString": "$$this"}, self.expr(d - 1)]}}}
        if c == 3:
            return {"$mergeObjects": [self.doc(d - 1) for _ in range(r.randint(1, 3))]}
        if c == 4:
            return {"$literal": {"n": r.choice(SMALL)}}
        return {f"f{i}": self.expr(d - 1) for i in range(r.randint(1, 3))}

    def num(self, d):
        r = self.rng
        if d <= 0 or r.random() < 0.3:
            return r.choice(FIELDS_NUM + SMALL)
        c = r.randrange(7)
        if c == 0:
            return {"$size": [self.arr(d - 1)]}
        if c == 1:
            return {"$strLenBytes": [self.str(d - 1)]}
        if c == 2:
            return {"$sum": self.arr(d - 1)}
        if c == 3:
            return {r.choice(["$add", "$multiply", "$max"]): [self.num(d - 1) for _ in range(r.randint(1, 3))]}
        if c == 4:
            return {"$bsonSize": [self.doc(d - 1)]}
        if c == 5:
            return {"$indexOfArray": [self.arr(d - 1), self.num(d - 1)]}
        return {"$pow": [2, r.choice([3, 30, 62, 64, 1000])]}

    def bool(self, d):
        r = self.rng
        if d <= 0 or r.random() < 0.2:
            return {"$gt": [r.choice(FIELDS_NUM), r.choice(SMALL)]}
        c = r.randrange(5)
        if c == 0:
            return {r.choice(["$gt", "$lt", "$eq", "$ne"]): [self.num(d - 1), self.num(d - 1)]}
        if c == 1:
            return {"$in": [self.num(d - 1), self.arr(d - 1)]}
        if c == 2:
            return {"$regexMatch": {"input": self.str(d - 1), "regex": r.choice(["^x", "a.*b", "(x+x+)+y", "."])}}
        if c == 3:
            return {r.choice(["$and", "$or"]): [self.bool(d - 1) for _ in range(r.randint(1, 3))]}
        return {"$anyElementTrue": [{"$map": {"input": self.arr(d - 1), "in": {"$gt": ["$$this", 5]}}}]}

    # -- filters -----------------------------------------------------------------------------
    def filter(self, d=2):
        r = self.rng
        c = r.randrange(9)
        # Nested filters get fewer clauses, so that a request stays well under 16 MB.
        n = r.choice([10, 1000, 5000, 20000] if d >= 2 else [10, 100, 1000])
        field = r.choice(["a", "b", "grp", "s", "tags", "sub.v"])
        values = (lambda: [f"s{r.randrange(DOCS)}" for _ in range(n)]) if field == "s" else \
            (lambda: [r.randrange(-DOCS, 2 * DOCS) for _ in range(n)])
        if c == 0:
            return {"$or": [{field: v} for v in values()]}
        if c == 1:
            return {field: {r.choice(["$in", "$nin"]): values()}}
        if c == 2:
            return {"$expr": self.bool(d + 1)}
        if c == 3 and d > 0:
            return {r.choice(["$and", "$or", "$nor"]): [self.filter(d - 1) for _ in range(r.randint(1, 4))]}
        if c == 4:
            return {"$or": [{"a": {"$gte": v, "$lt": v + r.choice([1, 100])}}
                            for v in (r.randrange(-DOCS, 2 * DOCS) for _ in range(n))]}
        if c == 5:
            return {"tags": {"$elemMatch": {"$in": values()}}}
        if c == 6:
            few = values()[:100]
            return {"$or": [{"a": v, "b": {"$in": few}} for v in values()[: n // 10 or 1]]}
        if c == 7:
            return {"s": {"$regex": r.choice(["^s1", "1$", "(s+s+)+x", "."])}}
        return {}

    # -- stages ------------------------------------------------------------------------------
    def stage(self, d, inner=False):
        r = self.rng
        c = r.randrange(20)
        if c == 0:
            return {"$match": self.filter()}
        if c in (1, 2):
            return {r.choice(["$addFields", "$set"]): {"g": self.expr(d), "h": self.expr(d - 1)}}
        if c == 3:
            return {"$project": {"g": self.expr(d), "a": 1, "s": 1, "grp": 1}}
        if c in (4, 5):
            return [{"$set": {"u": self.arr(d)}}, {"$unwind": r.choice(["$u", "$arr", "$tags"])}]
        if c == 6:
            acc = r.choice([{"$push": "$$ROOT"}, {"$push": self.expr(d - 1)}, {"$addToSet": "$s"},
                            {"$push": "$s"}])
            return {"$group": {"_id": r.choice([None, "$grp", "$a", {"$mod": ["$a", 7]}, "$s"]),
                               "p": acc, "n": {"$sum": 1}}}
        if c == 7:
            keys = ["a", "b", "s", "x", "grp", "g", "h", "u", "sub.v", "tags", "arr"] + \
                   [f"k{i}" for i in range(30)]
            r.shuffle(keys)
            return {"$sort": SON((k, r.choice([1, -1])) for k in keys[: r.randint(1, 32)])}
        if c == 8:
            step = r.choice([1, 0.5, 0.001, 1e-9])
            bounds = r.choice(["full", [0, big(r)], [-big(r), 10]])
            dz = {"field": r.choice(["a", "x", "b"]), "range": {"step": step, "bounds": bounds}}
            if r.random() < 0.4:
                dz["partitionByFields"] = ["grp"]
                dz["range"]["bounds"] = r.choice(["partition", bounds])
            return {"$densify": dz}
        if c == 9:
            return {"$bucketAuto": {"groupBy": r.choice(["$a", "$s", self.expr(d - 1)]),
                                    "buckets": r.choice([1, 10, 1000, 100_000]),
                                    "output": {"p": {"$push": r.choice(["$$ROOT", "$s"])}}}}
        if c == 10 and not inner:
            return {"$facet": {f"f{i}": self.pipeline(d - 1, inner=True, n=r.randint(1, 3))
                               for i in range(r.randint(1, 4))}}
        if c == 11 and not inner:
            if r.random() < 0.5:
                return {"$lookup": {"from": "c", "localField": r.choice(["grp", "tags", "arr"]),
                                    "foreignField": r.choice(["grp", "tags", "a"]), "as": "j"}}
            return {"$lookup": {"from": "c", "let": {"v": "$a"},
                                "pipeline": self.pipeline(d - 1, inner=True, n=r.randint(0, 2)), "as": "j"}}
        if c == 12 and not inner:
            return {"$graphLookup": {"from": "c", "startWith": r.choice(["$a", "$tags", "$grp"]),
                                     "connectFromField": r.choice(["a", "tags", "b"]),
                                     "connectToField": r.choice(["grp", "a", "tags"]), "as": "gl",
                                     "maxDepth": r.choice([0, 2, 10])}}
        if c == 13:
            fn = r.choice([{"$push": "$$ROOT"}, {"$push": "$s"}, {"$sum": "$a"}, {"$addToSet": "$tags"}])
            window = r.choice([{"documents": ["unbounded", "unbounded"]}, {"documents": [-100, 100]},
                               {"range": ["unbounded", "current"]}])
            fn = dict(fn, window=window)
            return {"$setWindowFields": {"partitionBy": r.choice(["$grp", None, "$b"]), "sortBy": {"a": 1},
                                         "output": {"w": fn}}}
        if c == 14:
            return {r.choice(["$limit", "$skip"]): r.choice([1, 10, 1000, 1_000_000])}
        if c == 15:
            return {"$replaceRoot": {"newRoot": self.doc(d)}}
        if c == 16:
            return {"$sortByCount": r.choice(["$grp", "$s", "$tags"])}
        if c == 17:
            return {"$sample": {"size": r.choice([1, 100, 100_000])}}
        if c == 18:
            return {"$project": {"s": 1, "a": 1, "grp": 1, "tags": 1}}
        return {"$match": {"$expr": self.bool(d)}}

    def pipeline(self, d, inner=False, n=None):
        out = []
        for _ in range(self.rng.randint(1, 5) if n is None else n):
            s = self.stage(d, inner)
            out.extend(s if isinstance(s, list) else [s])
        return out

    # -- requests ----------------------------------------------------------------------------
    def request(self):
        """(command name, command document) for one request, maxTimeMS included."""
        r = self.rng
        depth = r.randint(1, 5)
        mt = r.choice([50, 100, 200, 500, 1000, 2000, r.randint(50, 2000)])
        c = r.randrange(10)
        if c < 5:
            pipe = self.pipeline(depth)
            if r.random() < 0.4:
                pipe.append(r.choice([{"$count": "n"}, {"$group": {"_id": None, "n": {"$sum": 1}}}]))
            cmd = SON([("aggregate", "c"), ("pipeline", pipe), ("cursor", {"batchSize": r.choice([1, 101])})])
            if r.random() < 0.3:
                cmd["allowDiskUse"] = r.choice([True, False])
        elif c < 7:
            cmd = SON([("find", "c"), ("filter", self.filter(3))])
            if r.random() < 0.5:
                cmd["sort"] = SON((k, r.choice([1, -1])) for k in r.sample(["a", "b", "s", "x"], r.randint(1, 4)))
            if r.random() < 0.5:
                cmd["projection"] = {"g": self.expr(depth), "a": 1}
            cmd["batchSize"] = r.choice([1, 101, 10000])
        elif c == 7:
            cmd = SON([("count", "c"), ("query", self.filter(3))])
        elif c == 8:
            cmd = SON([("distinct", "c"), ("key", r.choice(["a", "s", "tags", "grp"])), ("query", self.filter(2))])
        else:
            # The computed value is kept out of storage: the last stage replaces it by its type,
            # so the collection does not grow from run to run while the computation is done.
            u = [{"$set": {"g": self.expr(depth)}}]
            if r.random() < 0.5:
                u.append({"$set": {"g2": {"$map": {"input": {"$range": [0, big(r)]}, "in": "$g"}}}})
            u.append(r.choice([{"$set": {"g": {"$type": "$g"}, "g2": "$$REMOVE"}}, {"$unset": ["g", "g2"]}]))
            cmd = SON([("update", "c"), ("updates", [{"q": self.filter(2), "u": u, "multi": r.random() < 0.7}])])
        cmd["maxTimeMS"] = mt
        return cmd


def rng_for(seed, client, index):
    return random.Random(f"{seed}:{client}:{index}")


# -- the server, its cgroup and its memory -----------------------------------------------------

def mounts():
    with open("/proc/self/mounts") as f:
        return [line.split() for line in f]


def own_cgroup(controller):
    """This process's cgroup path in the hierarchy of `controller` ('' for v2)."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrls, path = line.rstrip("\n").split(":", 2)
            if (controller == "" and ctrls == "") or controller in ctrls.split(","):
                return path
    return None


class Cgroup:
    """A child cgroup with a memory limit; `kind` says which, or why none."""

    def __init__(self, limit_mb):
        self.path = None
        self.kind = None
        self.why = []
        limit = limit_mb * 1024 * 1024
        name = f"mayfly-resource-fuzz-{os.getpid()}"
        for m in mounts():
            if m[2] == "cgroup2" and self._try_v2(m[1], name, limit):
                return
        for m in mounts():
            if m[2] == "cgroup" and "memory" in m[3].split(",") and self._try_v1(m[1], name, limit):
                return
        self.kind = "none (" + "; ".join(self.why or ["no memory cgroup mounted"]) + ")"

    def _try_v2(self, mount, name, limit):
        own = own_cgroup("")
        for base in [os.path.join(mount, (own or "/").lstrip("/")), mount]:
            try:
                with open(os.path.join(base, "cgroup.controllers")) as f:
                    if "memory" not in f.read().split():
                        self.why.append(f"v2 {base}: no memory controller")
                        continue
                with open(os.path.join(base, "cgroup.subtree_control")) as f:
                    enabled = "memory" in f.read().split()
                if not enabled:
                    with open(os.path.join(base, "cgroup.subtree_control"), "w") as f:
                        f.write("+memory")
                path = os.path.join(base, name)
                os.mkdir(path)
                with open(os.path.join(path, "memory.max"), "w") as f:
                    f.write(str(limit))
                try:
                    with open(os.path.join(path, "memory.swap.max"), "w") as f:
                        f.write("0")
                except OSError:
                    pass
                self.path, self.kind = path, f"cgroup v2 {path} memory.max={limit >> 20} MiB"
                return True
            except OSError as e:
                self.why.append(f"v2 {base}: {e.strerror or e}")
        return False

    def _try_v1(self, mount, name, limit):
        own = own_cgroup("memory") or "/"
        base = os.path.join(mount, own.lstrip("/"))
        try:
            path = os.path.join(base, name)
            os.mkdir(path)
            with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
                f.write(str(limit))
            try:
                with open(os.path.join(path, "memory.memsw.limit_in_bytes"), "w") as f:
                    f.write(str(limit))
            except OSError:
                pass
            self.path, self.kind = path, f"cgroup v1 {path} memory.limit_in_bytes={limit >> 20} MiB"
            self.v1 = True
            return True
        except OSError as e:
            self.why.append(f"v1 {base}: {e.strerror or e}")
            return False

    def enter(self):
        """For preexec_fn: move the calling (child) process into the cgroup."""
        if self.path:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    def oom_kills(self):
        if not self.path:
            return 0
        for name in ("memory.events", "memory.oom_control"):
            try:
                with open(os.path.join(self.path, name)) as f:
                    for line in f:
                        k, _, v = line.partition(" ")
                        if k == "oom_kill":
                            return int(v)
            except OSError:
                pass
        return 0

    def peak_mb(self):
        if not self.path:
            return None
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            try:
                with open(os.path.join(self.path, name)) as f:
                    return int(f.read()) >> 20
            except (OSError, ValueError):
                pass
        return None

    def remove(self):
        if self.path:
            for _ in range(50):
                try:
                    os.rmdir(self.path)
                    return
                except OSError:
                    time.sleep(0.1)


def proc_status(pid, field):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) // 1024  # MiB
    except OSError:
        pass
    return 0


def start_server(binary, args, cgroup, workdir):
    log_path = os.path.join(workdir, "server.log")
    log = open(log_path, "w")
    dbpath = os.path.join(workdir, "data")
    cmd = [binary, "--port", "0", "--dbpath", dbpath, "--log-format", "json", "--storage", args.storage,
           "--memoryLimitMB", str(args.memory_limit_mb)]
    if args.storage == "disk":
        cmd += ["--cacheSizeGB", "0.25"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=cgroup.enter)
    deadline = time.time() + 60
    while time.time() < deadline:
        with open(log_path) as f:
            for line in f:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("id") == 23016:  # mongod's "Waiting for connections"
                    return proc, int(event["attr"]["port"]), log_path
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    sys.exit(f"resource-fuzz: the server did not start; its log:\n{open(log_path).read()[-4000:]}")


def load(port, seed):
    rng = random.Random(seed)
    client = MongoClient(port=port, directConnection=True)
    db = client[DB]
    db.c.drop()
    docs = []
    for i in range(DOCS):
        docs.append({
            "_id": i, "a": i, "b": rng.randrange(DOCS), "grp": i % 10, "x": rng.random() * 1000,
            "s": f"s{i}", "tags": [rng.randrange(50) for _ in range(rng.randint(0, 6))],
            "arr": list(range(rng.randint(0, 20))), "sub": {"v": rng.randrange(100), "t": "x" * rng.randrange(200)},
        })
    db.c.insert_many(docs)
    for key in ("a", "s", "tags", "sub.v"):
        db.c.create_index(key)
    client.close()


# -- the run -----------------------------------------------------------------------------------

class Results:
    def __init__(self):
        self.lock = threading.Lock()
        self.outcomes = Counter()
        self.by_kind = Counter()
        self.passed = 0
        self.failures = []  # (why, client, index, command)
        self.unexpected = {}  # code -> (count, example message, client, index)
        self.max_overshoot_ms = None
        self.max_latency = (0, None)  # (ms, maxTimeMS)
        self.slowest_ping = 0.0
        self.pings = 0

    def record(self, client, index, cmd, latency_ms, outcome, failure=None, message=""):
        with self.lock:
            self.outcomes[outcome] += 1
            self.by_kind[next(iter(cmd))] += 1
            over = latency_ms - cmd["maxTimeMS"]
            if self.max_overshoot_ms is None or over > self.max_overshoot_ms:
                self.max_overshoot_ms = over
                self.max_latency = (latency_ms, cmd["maxTimeMS"], client, index)
            if failure is None and over > SLACK_MS:
                failure = f"latency {latency_ms:.0f} ms past maxTimeMS {cmd['maxTimeMS']} by more than {SLACK_MS} ms"
            if failure is None:
                self.passed += 1
            else:
                self.failures.append((f"{failure} (outcome {outcome}: {message[:300]})", client, index, cmd))
            if isinstance(outcome, int) and outcome not in ALLOWED and outcome not in BUG_CODES:
                n, example, c, i = self.unexpected.get(outcome, (0, message, client, index))
                self.unexpected[outcome] = (n + 1, example, c, i)


def classify(exc):
    """(outcome, failure or None, message) for an exception a command raised."""
    if isinstance(exc, OperationFailure):
        code = exc.code
        msg = str(exc.details.get("errmsg", exc)) if exc.details else str(exc)
        if code is None:
            return "no code", "error without a code", msg
        if code in BUG_CODES:
            return code, f"error {code} {BUG_CODES[code]}", msg
        return code, None, msg
    if isinstance(exc, (AutoReconnect, ConnectionFailure)):
        return "connection", f"connection failed: {type(exc).__name__}", str(exc)
    return type(exc).__name__, f"client error {type(exc).__name__}", str(exc)


def run_one(db, cmd):
    """Runs one command; returns (outcome, failure, message). Write errors count as errors."""
    try:
        reply = db.command(cmd)
    except (DocumentTooLarge, InvalidOperation) as e:
        return "too large to send", None, str(e)
    except PyMongoError as e:
        return classify(e)
    except bson.errors.BSONError as e:  # a reply the client could not decode
        return "bad reply", f"undecodable reply: {e}", str(e)
    cursor = reply.get("cursor")
    if cursor and cursor.get("id"):
        try:
            db.command("killCursors", next(iter(cmd.values())), cursors=[cursor["id"]])
        except PyMongoError:
            pass
    errors = reply.get("writeErrors") or []
    if errors:
        e = errors[0]
        code = e.get("code")
        if code in BUG_CODES:
            return code, f"write error {code} {BUG_CODES[code]}", e.get("errmsg", "")
        return code, None, e.get("errmsg", "")
    return "ok", None, ""


def client_loop(index, args, port, stop, results):
    client = MongoClient(port=port, directConnection=True, retryReads=False, retryWrites=False,
                         socketTimeoutMS=60_000, serverSelectionTimeoutMS=10_000)
    db = client[DB]
    i = 0
    while not stop.is_set():
        cmd = Gen(rng_for(args.seed, index, i)).request()
        start = time.monotonic()
        outcome, failure, message = run_one(db, cmd)
        latency = (time.monotonic() - start) * 1000
        results.record(index, i, cmd, latency, outcome, failure, message)
        i += 1
    client.close()


def ping_loop(port, stop, results, failures):
    client = MongoClient(port=port, directConnection=True, socketTimeoutMS=30_000)
    while not stop.is_set():
        start = time.monotonic()
        try:
            client.admin.command("ping")
        except PyMongoError as e:
            failures.append(f"ping failed: {e}")
        took = time.monotonic() - start
        results.pings += 1
        results.slowest_ping = max(results.slowest_ping, took)
        if took > PING_LIMIT_S:
            failures.append(f"ping took {took:.2f} s")
        stop.wait(0.2)
    client.close()


def kill_loop(port, stop, rng, killed):
    """Now and then kills one of the fuzzer's running operations (killOp -> 11601)."""
    client = MongoClient(port=port, directConnection=True, socketTimeoutMS=30_000)
    while not stop.wait(rng.uniform(0.5, 3.0)):
        try:
            ops = client.admin.command("currentOp", {"ns": {"$regex": f"^{DB}\\."}}).get("inprog", [])
            ops = [op for op in ops if "opid" in op]
            if ops:
                client.admin.command("killOp", op=rng.choice(ops)["opid"])
                killed[0] += 1
        except PyMongoError:
            pass
    client.close()


def memory_loop(pid, stop, peak):
    while not stop.wait(0.1):
        peak[0] = max(peak[0], proc_status(pid, "VmRSS"))


def show(cmd, limit=1500):
    text = json_util.dumps(cmd)
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary", nargs="?", default="target/debug/mayfly")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--memory-limit-mb", type=int, default=1024)
    parser.add_argument("--cgroup-mb", type=int, default=None,
                        help="the cgroup's hard limit (default: memory-limit-mb plus half)")
    parser.add_argument("--storage", choices=["memory", "disk"], default="memory")
    parser.add_argument("--no-kill", action="store_true", help="no killOp thread")
    parser.add_argument("--replay", metavar="CLIENT:INDEX", help="print and run one request alone")
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1_000_000)
    if args.replay:
        c, i = (int(x) for x in args.replay.split(":"))
        cmd = Gen(rng_for(args.seed, c, i)).request()
        print(f"resource-fuzz: seed {args.seed} client {c} request {i}:\n{json_util.dumps(cmd, indent=1)}")
        args.seconds, args.clients, args.no_kill = 0, 0, True

    cgroup = Cgroup(args.cgroup_mb or args.memory_limit_mb * 3 // 2)
    workdir = tempfile.mkdtemp(prefix="mayfly-resource-fuzz-")
    proc, port, log_path = start_server(os.path.abspath(args.binary), args, cgroup, workdir)
    print(f"resource-fuzz: seed {args.seed}, {args.clients} clients, {args.seconds:g} s, "
          f"--memoryLimitMB {args.memory_limit_mb}, --storage {args.storage}, server pid {proc.pid} port {port}")
    print(f"resource-fuzz: memory limit: {cgroup.kind}")
    load(port, args.seed)

    results = Results()
    stop = threading.Event()
    ping_failures, killed, peak = [], [0], [0]
    threads = [threading.Thread(target=ping_loop, args=(port, stop, results, ping_failures), daemon=True),
               threading.Thread(target=memory_loop, args=(proc.pid, stop, peak), daemon=True)]
    if not args.no_kill:
        threads.append(threading.Thread(target=kill_loop, args=(port, stop, random.Random(args.seed), killed),
                                        daemon=True))
    threads += [threading.Thread(target=client_loop, args=(i, args, port, stop, results), daemon=True)
                for i in range(args.clients)]
    for t in threads:
        t.start()
    started = time.monotonic()
    if args.replay:
        db = MongoClient(port=port, directConnection=True, socketTimeoutMS=120_000)[DB]
        start = time.monotonic()
        outcome, failure, message = run_one(db, cmd)
        latency = (time.monotonic() - start) * 1000
        results.record(c, i, cmd, latency, outcome, failure, message)
        print(f"resource-fuzz: replay: {outcome} after {latency:.0f} ms (maxTimeMS {cmd['maxTimeMS']}): {message[:500]}")
    else:
        while time.monotonic() - started < args.seconds and proc.poll() is None:
            time.sleep(0.2)
    stop.set()
    # A client thread ends once its request in flight has; one stuck past the socket timeout
    # is itself a failure the results will show.
    for t in threads:
        t.join(timeout=90)
    elapsed = time.monotonic() - started

    died = proc.poll()
    hwm = proc_status(proc.pid, "VmHWM")
    server_failures = []
    if died is not None:
        server_failures.append(f"the server exited during the run with status {died}"
                               + (" (SIGKILL: killed for memory?)" if died == -signal.SIGKILL else ""))
    else:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            server_failures.append("the server did not stop within 30 s of SIGTERM")
    ooms = cgroup.oom_kills()
    if ooms:
        server_failures.append(f"{ooms} OOM kill(s) in the server's cgroup")
    cgroup_peak = cgroup.peak_mb()
    cgroup.remove()

    total = sum(results.outcomes.values())
    print(f"resource-fuzz: {total} requests in {elapsed:.0f} s ({dict(results.by_kind)}); "
          f"{killed[0]} killOps sent; {results.pings} pings, slowest {results.slowest_ping * 1000:.0f} ms")
    outcomes = ", ".join(f"{k}{' ' + ALLOWED[k] if k in ALLOWED else ''}: {v}"
                         for k, v in sorted(results.outcomes.items(), key=lambda kv: -kv[1]))
    print(f"resource-fuzz: outcomes: {outcomes}")
    if results.max_overshoot_ms is not None:
        lat, mt, c, i = results.max_latency
        print(f"resource-fuzz: max overshoot past maxTimeMS: {results.max_overshoot_ms:.0f} ms "
              f"({lat:.0f} ms for maxTimeMS {mt}, client {c} request {i})")
    print(f"resource-fuzz: peak RSS: {max(peak[0], hwm)} MiB (VmRSS sampled every 0.1 s: {peak[0]} MiB, "
          f"VmHWM: {hwm} MiB)" + (f"; cgroup peak {cgroup_peak} MiB" if cgroup_peak is not None else "")
          + f"; OOM kills: {ooms}")
    for code, (n, example, c, i) in sorted(results.unexpected.items(), key=lambda kv: str(kv[0])):
        print(f"resource-fuzz: unexpected code {code} x{n} (not failing), e.g. client {c} request {i}: {example[:300]}")
    for why, c, i, cmd in results.failures[:20]:
        print(f"resource-fuzz: FAILED: {why}\n  reproduce: {sys.argv[0]} --seed {args.seed} --replay {c}:{i}\n"
              f"  request: {show(cmd)}")
    if len(results.failures) > 20:
        print(f"resource-fuzz: ... and {len(results.failures) - 20} more failed requests")
    for why in ping_failures[:10] + server_failures:
        print(f"resource-fuzz: FAILED: {why}")
    if server_failures:
        print(f"resource-fuzz: the server's log ends with:\n{open(log_path).read()[-3000:]}")
    if results.failures:
        with open(os.path.join(workdir, "failures.jsonl"), "w") as f:
            for why, c, i, cmd in results.failures:
                f.write(json_util.dumps({"why": why, "client": c, "index": i, "request": cmd}) + "\n")
    failed = len(results.failures) + len(ping_failures) + len(server_failures)
    print(f"resource-fuzz: {results.passed} passed, {failed} failed")
    if not failed:
        subprocess.run(["rm", "-rf", workdir])
    else:
        print(f"resource-fuzz: server log and the failed requests (failures.jsonl) kept in {workdir}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
