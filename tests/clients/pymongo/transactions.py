"""Transactions through pymongo against a replica set: `with_transaction` moves money between two
collections atomically; a callback that raises leaves nothing; a concurrent writer makes the
transaction fail with a write conflict that pymongo retries (TransientTransactionError)."""
import os
import threading

import pymongo
from pymongo.errors import OperationFailure

client = pymongo.MongoClient(os.environ["MAYFLY_URI"], serverSelectionTimeoutMS=5000)
client.drop_database("pymongo_txn")
db = client.pymongo_txn
accounts, ledger = db.accounts, db.ledger
accounts.insert_many([{"_id": "alice", "balance": 100}, {"_id": "bob", "balance": 0}])
ledger.insert_one({"_id": "opened"})


def transfer(amount, entry):
    def callback(session):
        accounts.update_one({"_id": "alice"}, {"$inc": {"balance": -amount}}, session=session)
        accounts.update_one({"_id": "bob"}, {"$inc": {"balance": amount}}, session=session)
        ledger.insert_one({"_id": entry, "amount": amount}, session=session)
        # Inside: its own writes.
        assert accounts.find_one({"_id": "bob"}, session=session)["balance"] >= amount
        return entry

    return callback


with client.start_session() as session:
    assert session.with_transaction(transfer(30, "t1")) == "t1"
assert accounts.find_one({"_id": "alice"})["balance"] == 70
assert accounts.find_one({"_id": "bob"})["balance"] == 30
assert ledger.count_documents({}) == 2


class Refused(Exception):
    pass


def refuse(session):
    ledger.insert_one({"_id": "t2"}, session=session)
    raise Refused()


with client.start_session() as session:
    try:
        session.with_transaction(refuse)
        raise AssertionError("the callback's exception must propagate")
    except Refused:
        pass
assert ledger.find_one({"_id": "t2"}) is None
assert ledger.count_documents({}) == 2

# A write conflict: another session's transaction holds bob; pymongo retries ours until it
# commits, after the other one committed.
attempts = []
other = client.start_session()
other.start_transaction()
accounts.update_one({"_id": "bob"}, {"$inc": {"balance": 1}}, session=other)
release = threading.Timer(0.3, other.commit_transaction)


def conflicting(session):
    attempts.append(1)
    accounts.update_one({"_id": "bob"}, {"$inc": {"balance": 5}}, session=session)


release.start()
with client.start_session() as session:
    session.with_transaction(conflicting)
release.join()
other.end_session()
assert len(attempts) > 1, attempts
assert accounts.find_one({"_id": "bob"})["balance"] == 36

# A statement a transaction may not run.
with client.start_session() as session:
    session.start_transaction()
    try:
        db.command("count", "accounts", session=session)
        raise AssertionError("count ran in a transaction")
    except OperationFailure as e:
        assert e.code == 263, e.details
    session.abort_transaction()
print("ok")
