"""The operations on session entities: transactions (start, commit, abort, withTransaction with
its callback of operations) and endSession.

Not here: sessions' creation and options (entities.py), the assertions on a session's state
(special.py), or how the callback's operations are run and checked (scenario.py).
"""
from entities import transaction_options
from operations import Result


def transaction_kwargs(a):
    """startTransaction/withTransaction options as pymongo keywords."""
    options = {}
    for name in ("readConcern", "writeConcern", "readPreference", "maxCommitTimeMS"):
        if a.has(name):
            options[name] = a.optional(name)
    spec = transaction_options(options)
    return {
        "read_concern": spec.read_concern,
        "write_concern": spec.write_concern,
        "read_preference": spec.read_preference,
        "max_commit_time_ms": spec.max_commit_time_ms,
    }


def start_transaction(session, a):
    kwargs = transaction_kwargs(a)
    a.finish()
    session.start_transaction(**kwargs)
    return Result(None)


def commit_transaction(session, a):
    a.finish()
    session.commit_transaction()
    return Result(None)


def abort_transaction(session, a):
    a.finish()
    session.abort_transaction()
    return Result(None)


def with_transaction(session, a):
    """The callback's operations run in order; the first error (a failed operation, or one whose
    expected error did not match) is raised into with_transaction, which may retry."""
    callback = a.required("callback")
    kwargs = transaction_kwargs(a)
    a.finish()
    result = session.with_transaction(lambda _session: a.run_operations(callback), **kwargs)
    return Result(result)


def end_session(session, a):
    a.finish()
    session.end_session()
    return Result(None)


SESSION_OPERATIONS = {
    "abortTransaction": abort_transaction,
    "commitTransaction": commit_transaction,
    "endSession": end_session,
    "startTransaction": start_transaction,
    "withTransaction": with_transaction,
}
