"""Matching expected values against actual ones, as the unified test format's "Evaluating
Matches" defines it, and the exact comparison it requires for collection contents.

Owns: flexible numeric comparison, extra fields allowed in root-level documents only, arrays of
equal length, key order ignored, and the special operators ($$exists, $$type, $$unsetOrMatches,
$$matchesEntity, $$matchesHexBytes, $$sessionLsid, $$lte, $$matchAsDocument, $$matchAsRoot).
Not here: what counts as a root-level document for an operation's result (the caller says so),
or how results are shaped (operations.py).
"""
import datetime
import re

from bson import json_util
from bson.binary import Binary
from bson.code import Code
from bson.dbref import DBRef
from bson.decimal128 import Decimal128
from bson.int64 import Int64
from bson.max_key import MaxKey
from bson.min_key import MinKey
from bson.objectid import ObjectId
from bson.regex import Regex
from bson.timestamp import Timestamp

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


class Mismatch(AssertionError):
    """An expected value did not match; the message names the path where it differs."""


def bson_type(value):
    """The BSON type name ($type alias) a decoded or to-be-encoded Python value has. A plain
    Python int is an int32 when it fits, as pymongo encodes it, else an int64."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, Int64):
        return "long"
    if isinstance(value, int):
        return "int" if INT32_MIN <= value <= INT32_MAX else "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, Decimal128):
        return "decimal"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, (bytes, Binary)):
        return "binData"
    if isinstance(value, ObjectId):
        return "objectId"
    if isinstance(value, datetime.datetime):
        return "date"
    if isinstance(value, (Regex, re.Pattern)):
        return "regex"
    if isinstance(value, DBRef):
        return "dbPointer"
    if isinstance(value, Code):
        return "javascriptWithScope" if value.scope is not None else "javascript"
    if isinstance(value, Timestamp):
        return "timestamp"
    if isinstance(value, MinKey):
        return "minKey"
    if isinstance(value, MaxKey):
        return "maxKey"
    return type(value).__name__


NUMERIC = {"int", "long", "double"}
TYPE_ALIASES = {
    "double", "string", "object", "array", "binData", "undefined", "objectId", "bool", "date",
    "null", "regex", "dbPointer", "javascript", "symbol", "javascriptWithScope", "int",
    "timestamp", "long", "decimal", "minKey", "maxKey", "number",
}


def _show(value):
    try:
        return json_util.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def special_operator(expected):
    """The ($$name, argument) of a special operator, or None: a document whose only key starts
    with $$."""
    if isinstance(expected, dict) and len(expected) == 1:
        (key, arg), = expected.items()
        if key.startswith("$$"):
            return key, arg
    return None


class Matcher:
    """Evaluates matches against the entities of one test (for $$matchesEntity, $$sessionLsid)."""

    def __init__(self, entities):
        self.entities = entities

    def match(self, expected, actual, root=True, path="$", present=True):
        """Raises Mismatch unless `actual` matches `expected`. `root` marks a root-level document
        (extra fields allowed); a top-level array of documents is matched element by element as
        root-level documents when `root` is true (find, aggregate). `present` false says there
        is no actual value at all (an optional result the driver does not report)."""
        op = special_operator(expected)
        if op is not None:
            self._operator(op, actual, root, path, present=present)
            return
        if not present:
            raise Mismatch(f"{path}: missing (expected {_show(expected)})")
        if isinstance(expected, dict):
            self._document(expected, actual, root, path)
        elif isinstance(expected, list):
            if not isinstance(actual, list):
                raise Mismatch(f"{path}: expected an array, got {_show(actual)}")
            if len(expected) != len(actual):
                raise Mismatch(
                    f"{path}: expected {len(expected)} elements, got {len(actual)}: {_show(actual)}"
                )
            for i, (e, a) in enumerate(zip(expected, actual)):
                self.match(e, a, root=root and isinstance(e, dict), path=f"{path}[{i}]")
        else:
            self._scalar(expected, actual, path)

    def _document(self, expected, actual, root, path):
        if not isinstance(actual, dict):
            raise Mismatch(f"{path}: expected a document, got {_show(actual)}")
        for key, value in expected.items():
            sub = f"{path}.{key}"
            op = special_operator(value)
            if op is not None:
                self._operator(op, actual.get(key), False, sub, present=key in actual)
                continue
            if key not in actual:
                raise Mismatch(f"{sub}: missing (expected {_show(value)})")
            self.match(value, actual[key], root=False, path=sub)
        if not root:
            extra = [k for k in actual if k not in expected]
            if extra:
                raise Mismatch(f"{path}: unexpected fields {extra} in {_show(actual)}")

    def _operator(self, op, actual, root, path, present):
        name, arg = op
        if name == "$$exists":
            if not isinstance(arg, bool):
                raise Mismatch(f"{path}: $$exists takes a boolean, got {_show(arg)}")
            if present != arg:
                raise Mismatch(f"{path}: expected {'present' if arg else 'absent'}")
            return
        if name == "$$unsetOrMatches":
            if present:
                self.match(arg, actual, root=root, path=path)
            return
        if not present:
            raise Mismatch(f"{path}: missing (expected {name} {_show(arg)})")
        if name == "$$type":
            aliases = arg if isinstance(arg, list) else [arg]
            unknown = [a for a in aliases if a not in TYPE_ALIASES]
            if unknown:
                raise Mismatch(f"{path}: unknown $$type alias {unknown}")
            kind = bson_type(actual)
            if kind not in aliases and not ("number" in aliases and kind in NUMERIC | {"decimal"}):
                raise Mismatch(f"{path}: expected type {aliases}, got {kind} {_show(actual)}")
        elif name == "$$matchesEntity":
            self.match(self.entities.value(arg), actual, root=root, path=path)
        elif name == "$$matchesHexBytes":
            if not isinstance(arg, str) or not re.fullmatch(r"(?:[0-9a-fA-F]{2})*", arg):
                raise Mismatch(f"{path}: malformed $$matchesHexBytes {_show(arg)}")
            if bytes(actual) != bytes.fromhex(arg):
                raise Mismatch(f"{path}: expected bytes {arg}, got {_show(actual)}")
        elif name == "$$sessionLsid":
            self.match(self.entities.session_lsid(arg), actual, root=False, path=path)
        elif name == "$$lte":
            if bson_type(actual) not in NUMERIC or bson_type(arg) not in NUMERIC:
                raise Mismatch(f"{path}: $$lte needs numbers, got {_show(actual)}")
            if not actual <= arg:
                raise Mismatch(f"{path}: expected <= {arg}, got {actual}")
        elif name == "$$matchAsDocument":
            if not isinstance(actual, str):
                raise Mismatch(f"{path}: $$matchAsDocument needs a string, got {_show(actual)}")
            self.match(arg, json_util.loads(actual), root=False, path=path)
        elif name == "$$matchAsRoot":
            self.match(arg, actual, root=True, path=path)
        else:
            raise Mismatch(f"{path}: unknown special operator {name}")

    def _scalar(self, expected, actual, path):
        if not same_value(expected, actual, flexible_numbers=True):
            raise Mismatch(f"{path}: expected {_show(expected)}, got {_show(actual)}")


def same_value(expected, actual, flexible_numbers):
    """Equality of two scalars with their BSON types: int32, int64 and double are equal by value
    when `flexible_numbers`, otherwise the types must agree too."""
    kind_e, kind_a = bson_type(expected), bson_type(actual)
    if flexible_numbers and kind_e in NUMERIC and kind_a in NUMERIC:
        return expected == actual
    if kind_e != kind_a:
        return False
    if kind_e == "binData":
        return bytes(expected) == bytes(actual) and _subtype(expected) == _subtype(actual)
    if kind_e == "regex":
        return _regex(expected) == _regex(actual)
    if kind_e == "double" and expected != expected:
        return actual != actual
    return expected == actual


def _subtype(value):
    return value.subtype if isinstance(value, Binary) else 0


def _regex(value):
    return value.pattern, value.flags


def exactly_equal(expected, actual, path="$"):
    """Raises Mismatch unless the two values are the same BSON, key order aside: the rule for a
    collection's contents after a test (no special operators, no extra fields, types exact)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise Mismatch(f"{path}: expected a document, got {_show(actual)}")
        if set(expected) != set(actual):
            raise Mismatch(f"{path}: expected fields {sorted(expected)}, got {sorted(actual)}")
        for key in expected:
            exactly_equal(expected[key], actual[key], f"{path}.{key}")
    elif isinstance(expected, list):
        if not isinstance(actual, list) or len(expected) != len(actual):
            raise Mismatch(f"{path}: expected {_show(expected)}, got {_show(actual)}")
        for i, (e, a) in enumerate(zip(expected, actual)):
            exactly_equal(e, a, f"{path}[{i}]")
    elif not same_value(expected, actual, flexible_numbers=False):
        raise Mismatch(
            f"{path}: expected {_show(expected)} ({bson_type(expected)}), "
            f"got {_show(actual)} ({bson_type(actual)})"
        )
