"""expectError: the assertions on an error an operation raised.

Owns telling client errors from server errors with pymongo's exception types, the message, code
and code name of a server error (aggregated over a BulkWriteError's write errors and write
concern error, as the spec's bulkWrite section requires), labels, the server response and the
partial result of a bulk write. Not here: running the operation.
"""
from pymongo.errors import (
    BulkWriteError,
    ClientBulkWriteException,
    NotPrimaryError,
    OperationFailure,
    PyMongoError,
)

from entities import RunnerError
from matcher import Mismatch
from results import bulk_error_result, client_bulk_result

KNOWN = {
    "isError", "isClientError", "isTimeoutError", "errorContains", "errorCode", "errorCodeName",
    "errorLabelsContain", "errorLabelsOmit", "errorResponse", "expectResult", "writeErrors",
    "writeConcernErrors",
}


def is_server_error(error):
    """Whether the error was derived from a server response (a command's reply or a write
    error); anything else pymongo or Python raised is a client error. A client bulk write's
    exception is judged by its top-level error, when it has one."""
    if isinstance(error, ClientBulkWriteException) and error.error is not None:
        return is_server_error(error.error)
    return isinstance(error, (OperationFailure, NotPrimaryError))


def server_errors(error):
    """The server error documents an error carries: the reply of a failed command, the write
    error of a single write, or each write error and the write concern error of a bulk write."""
    if isinstance(error, ClientBulkWriteException):
        # Only the top-level error: its write errors are for writeErrors alone (spec).
        return server_errors(error.error) if error.error is not None else []
    if isinstance(error, BulkWriteError):
        details = error.details or {}
        found = list(details.get("writeErrors", []))
        found += list(details.get("writeConcernErrors", []))
        return found
    if isinstance(error, OperationFailure):
        details = dict(error.details or {})
        details.setdefault("code", error.code)
        details.setdefault("errmsg", str(error))
        return [details]
    if isinstance(error, NotPrimaryError):
        return [dict(error.details or {})]
    return []


def describe(error):
    if isinstance(error, PyMongoError) and getattr(error, "details", None):
        return f"{type(error).__name__}: {error.details}"
    return f"{type(error).__name__}: {error}"


def check(expected, error, matcher):
    """Raises Mismatch unless `error` satisfies every assertion of the expectedError."""
    unknown = set(expected) - KNOWN
    if unknown:
        raise RunnerError(f"expectError fields {sorted(unknown)} not supported")
    if "writeErrors" in expected or "writeConcernErrors" in expected:
        raise RunnerError("writeErrors/writeConcernErrors apply to clientBulkWrite, not supported")
    got = describe(error)
    server = is_server_error(error)
    if "isClientError" in expected and expected["isClientError"] == server:
        kind = "a client" if expected["isClientError"] else "a server"
        raise Mismatch(f"expected {kind} error, got {got}")
    if "isTimeoutError" in expected:
        timeout = isinstance(error, PyMongoError) and error.timeout
        if expected["isTimeoutError"] != timeout:
            raise Mismatch(f"isTimeoutError {expected['isTimeoutError']}: got {got}")
    replies = server_errors(error)
    if "errorContains" in expected:
        needle = expected["errorContains"].lower()
        messages = [str(r.get("errmsg", "")) for r in replies] if server else [str(error)]
        if not any(needle in m.lower() for m in messages):
            raise Mismatch(f"error message does not contain {expected['errorContains']!r}: {got}")
    if "errorCode" in expected:
        if not any(r.get("code") == expected["errorCode"] for r in replies):
            raise Mismatch(f"expected error code {expected['errorCode']}, got {got}")
    if "errorCodeName" in expected:
        name = expected["errorCodeName"].lower()
        if not any(str(r.get("codeName", "")).lower() == name for r in replies):
            raise Mismatch(f"expected error code name {expected['errorCodeName']}, got {got}")
    for label in expected.get("errorLabelsContain", []):
        if not (isinstance(error, PyMongoError) and error.has_error_label(label)):
            raise Mismatch(f"error lacks label {label}: {got}")
    for label in expected.get("errorLabelsOmit", []):
        if isinstance(error, PyMongoError) and error.has_error_label(label):
            raise Mismatch(f"error has label {label}: {got}")
    if "errorResponse" in expected:
        if not isinstance(error, OperationFailure):
            raise Mismatch(f"expected a server response, got {got}")
        matcher.match(expected["errorResponse"], dict(error.details or {}), root=True,
                      path="errorResponse")
    if "expectResult" in expected and isinstance(error, ClientBulkWriteException):
        partial = error.partial_result
        matcher.match(expected["expectResult"], client_bulk_result(partial) if partial else None,
                      root=True, path="expectError.expectResult", present=partial is not None)
    elif "expectResult" in expected:
        if not isinstance(error, BulkWriteError):
            raise Mismatch(f"expected an error carrying a write result, got {got}")
        matcher.match(expected["expectResult"], bulk_error_result(error), root=True,
                      path="expectError.expectResult")
