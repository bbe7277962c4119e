"""Change streams: createChangeStream on a client, database or collection, and the operations
on the change stream entity it saves (iterateUntilDocumentOrError, iterateOnce, close).

A change stream's change documents are root-level documents. Iterating until a document waits
at most ITERATE_TIMEOUT seconds, so a server that never reports the change fails the test
instead of hanging the run. Not here: the change stream itself (pymongo's, with its resume
rules) or the server's events (the server under test).
"""
import time

from operations import Result

ITERATE_TIMEOUT = 5

WATCH_OPTIONS = {
    "batchSize": "batch_size",
    "collation": "collation",
    "comment": "comment",
    "fullDocument": "full_document",
    "fullDocumentBeforeChange": "full_document_before_change",
    "maxAwaitTimeMS": "max_await_time_ms",
    "resumeAfter": "resume_after",
    "showExpandedEvents": "show_expanded_events",
    "startAfter": "start_after",
    "startAtOperationTime": "start_at_operation_time",
}


class StreamTimeout(AssertionError):
    """No change arrived within ITERATE_TIMEOUT seconds."""


def create_change_stream(target, a):
    """`watch` on the client, database or collection: the aggregate with $changeStream runs now,
    so its error (if any) is this operation's."""
    pipeline = a.optional("pipeline", [])
    kwargs = a.pass_through(**WATCH_OPTIONS).finish()
    stream = target.watch(pipeline, **kwargs)
    return Result(None, entity=stream)


def iterate_until_document_or_error(stream, a):
    a.finish()
    deadline = time.monotonic() + ITERATE_TIMEOUT
    while True:
        change = stream.try_next()
        if change is not None:
            return Result(change)
        if not stream.alive:
            raise StreamTimeout("the change stream was closed before a change arrived")
        if time.monotonic() > deadline:
            raise StreamTimeout(f"no change within {ITERATE_TIMEOUT}s")


def iterate_once(stream, a):
    """One getMore at most (try_next): a change, or nothing."""
    a.finish()
    return Result(stream.try_next())


def close(stream, a):
    a.finish()
    stream.close()
    return Result(None)


WATCH_OPERATIONS = {"createChangeStream": create_change_stream}

STREAM_OPERATIONS = {
    "close": close,
    "iterateOnce": iterate_once,
    "iterateUntilDocumentOrError": iterate_until_document_or_error,
}
