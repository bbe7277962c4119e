"""Bulk loading through pymongo, as an ETL job does it: one client, `insert_many` of
`--batch` documents at a time until `--docs` are in, default write concern (durable).

    python benches/pymongo_insert_many.py --uri mongodb://127.0.0.1:27017 --pid PID

Prints documents per second and, given the server's process id (`--pid`, Linux), the share of
one core the server used over the load (its user + system time from /proc/PID/stat over the
wall time) next to this client's. The documents are the crud bench's (~100 bytes). Measures
only: nothing here asserts on time. pymongo comes from tests/clients/.venv
(tests/clients/setup.sh installs it).
"""

import argparse
import os
import time

from pymongo import MongoClient


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid`, or None when /proc does not say."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # Fields 14 and 15 of the stat line (utime, stime), counted after the command name.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--uri", default="mongodb://127.0.0.1:27017/?directConnection=true")
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--pid", type=int, help="the server's process id, for its CPU share")
    args = parser.parse_args()

    client = MongoClient(args.uri)
    coll = client["mayfly_bench"]["pymongo_insert_many"]
    coll.drop()
    server_before = cpu_seconds(args.pid) if args.pid else None
    client_before = time.process_time()
    started = time.perf_counter()
    for first in range(0, args.docs, args.batch):
        last = min(first + args.batch, args.docs)
        coll.insert_many(
            [
                {
                    "_id": i,
                    "task": 0,
                    "i": i,
                    "s": "mayfly-bench-payload-0123456789abcdefghijklmnopqrstuvwxyz",
                }
                for i in range(first, last)
            ]
        )
    elapsed = time.perf_counter() - started
    client_cpu = time.process_time() - client_before
    count = coll.estimated_document_count()
    line = (
        f"pymongo insert_many: {args.docs} documents in batches of {args.batch}, "
        f"{elapsed:.2f} s, {args.docs / elapsed:,.0f} docs/s"
    )
    if server_before is not None:
        server_cpu = cpu_seconds(args.pid) - server_before
        line += f", server CPU {server_cpu / elapsed:.0%} of a core"
    line += f", client CPU {client_cpu / elapsed:.0%} of a core"
    print(line)
    if count != args.docs:
        raise SystemExit(f"the collection holds {count} documents, not {args.docs}")


if __name__ == "__main__":
    main()
