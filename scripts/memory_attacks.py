#!/usr/bin/env python3
"""Peak RSS of a mayfly server under the memory attacks of docs/operations.md.

Usage: scripts/memory_attacks.py PATH/TO/mayfly [ATTACK ...]

For each attack, starts the server on a fresh data directory, resets its peak RSS
(/proc/PID/clear_refs) once it is idle, runs the attack, and prints the server's VmHWM (peak
resident memory), VmPeak (peak virtual memory) and what it answered.
Needs pymongo (for `bson` and the client) and Linux /proc. Run as a user that may write the
server's clear_refs (its owner).
"""

import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

import bson
from pymongo import MongoClient

PORT = 27417


def status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) // 1024  # MiB
    return 0


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def op_msg(body, sequence=None, compress=False, request_id=1):
    payload = struct.pack("<I", 0) + b"\x00" + bson.encode(body)
    if sequence is not None:
        name, docs = sequence
        section = name.encode() + b"\x00" + docs
        payload += b"\x01" + struct.pack("<i", len(section) + 4) + section
    if compress:
        packed = zlib.compress(payload, 9)
        inner = struct.pack("<iiB", 2013, len(payload), 2) + packed
        return struct.pack("<iiii", 16 + len(inner), request_id, 0, 2012) + inner
    return struct.pack("<iiii", 16 + len(payload), request_id, 0, 2013) + payload


def read_reply(sock):
    header = recv_exactly(sock, 16)
    length, _, _, op = struct.unpack("<iiii", header)
    rest = recv_exactly(sock, length - 16)
    if op == 2012:
        _, size, _ = struct.unpack("<iiB", rest[:9])
        rest = zlib.decompress(rest[9:])
    return bson.decode(rest[5:])


def recv_exactly(sock, n):
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def empty_documents_insert(n):
    """insert of n empty documents in one zlib-compressed OP_MSG sequence."""
    def attack(pid, client):
        msg = op_msg({"insert": "c", "$db": "attack"}, ("documents", b"\x05\x00\x00\x00\x00" * n),
                     compress=True)
        with socket.create_connection(("127.0.0.1", PORT)) as s:
            s.settimeout(600)
            start = time.time()
            s.sendall(msg)
            reply = read_reply(s)
            took = time.time() - start
        return f"{len(msg)} bytes on the wire; reply in {took:.2f}s: {short(reply)}"
    return attack


def empty_documents_in_body(n):
    """insert of n empty documents as an array in the command body, zlib-compressed."""
    def attack(pid, client):
        msg = op_msg({"insert": "c", "documents": [{}] * n, "$db": "attack"}, compress=True)
        with socket.create_connection(("127.0.0.1", PORT)) as s:
            s.settimeout(600)
            start = time.time()
            s.sendall(msg)
            reply = read_reply(s)
            took = time.time() - start
        return f"{len(msg)} bytes on the wire; reply in {took:.2f}s: {short(reply)}"
    return attack


def big_headers(connections):
    """Each connection sends a header claiming 48 MB, then 16 bytes, and waits."""
    def attack(pid, client):
        socks = []
        for _ in range(connections):
            s = socket.create_connection(("127.0.0.1", PORT))
            s.sendall(struct.pack("<iiii", 48_000_000, 1, 0, 2013) + b"\x00" * 16)
            socks.append(s)
        time.sleep(2)
        for s in socks:
            s.close()
        return f"{connections} connections each announcing 48 MB"
    return attack


def seed(client, mb):
    coll = client.attack.big
    coll.drop()
    payload = "x" * (1024 * 1024 - 100)
    for start in range(0, mb, 16):
        coll.insert_many([{"_id": i, "k": mb - i, "s": payload} for i in range(start, min(mb, start + 16))])
    return coll


def sorted_cursors(count, mb):
    """count open find cursors sorted on an unindexed field over an mb-MB collection."""
    def attack(pid, client):
        coll = seed(client, mb)
        reset_peak(pid)
        cursors, errors = [], []
        for _ in range(count):
            try:
                c = coll.find({}, batch_size=1, sort=[("k", 1)], allow_disk_use=True)
                next(c)
                cursors.append(c)
            except Exception as e:  # noqa: BLE001 - the refusal is the result
                errors.append(short_error(e))
        for c in cursors:
            c.close()
        return f"{len(cursors)} cursors open, {len(errors)} refused: {errors[:1]}"
    return attack


def group_push_root(mb):
    def attack(pid, client):
        coll = seed(client, mb)
        reset_peak(pid)
        try:
            list(coll.aggregate([{"$group": {"_id": None, "all": {"$push": "$$ROOT"}}}]))
            return "answered"
        except bson.errors.InvalidBSON as e:
            return f"answered with a reply the client could not read: {str(e)[:80]}"
        except Exception as e:  # noqa: BLE001
            return short_error(e)
    return attack


def short(reply):
    return {k: reply[k] for k in ("ok", "n", "code", "errmsg") if k in reply}


def short_error(e):
    details = getattr(e, "details", None) or {}
    return f"{details.get('code')} {str(details.get('errmsg', e))[:90]}"


ATTACKS = {
    "insert-1m-empty": empty_documents_insert(1_000_000),
    "insert-9m-empty": empty_documents_insert(9_000_000),
    "insert-1m-empty-in-body": empty_documents_in_body(1_000_000),
    "headers-48mb-x100": big_headers(100),
    "sorted-cursors-10x100mb": sorted_cursors(10, 100),
    "group-push-root-120mb": group_push_root(120),
}


def run_attack(binary, name):
    """Runs one attack against a fresh server, so each peak starts from an idle one."""
    with tempfile.TemporaryDirectory() as dbpath:
        server = subprocess.Popen(
            [binary, "--port", str(PORT), "--dbpath", dbpath, "--log-level", "error"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            client = MongoClient(f"mongodb://127.0.0.1:{PORT}/?directConnection=true",
                                 serverSelectionTimeoutMS=20000, compressors="zlib")
            client.admin.command("ping")
            reset_peak(server.pid)
            idle = status(server.pid, "VmRSS")
            result = ATTACKS[name](server.pid, client)
            client.admin.command("ping")
            print(f"{name}: peak RSS {status(server.pid, 'VmHWM')} MiB, peak virtual "
                  f"{status(server.pid, 'VmPeak')} MiB (idle RSS {idle} MiB); {result}",
                  flush=True)
            client.close()
        finally:
            server.terminate()
            server.wait()


def main():
    binary = sys.argv[1]
    for name in sys.argv[2:] or list(ATTACKS):
        run_attack(binary, name)


if __name__ == "__main__":
    main()
