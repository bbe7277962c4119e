"""The matching rules the runner applies, each a row: expected, actual, whether it matches.
run.py runs these first, so a loosened matcher fails the run before any server test passes."""
import unittest

from bson.int64 import Int64
from bson.objectid import ObjectId

from matcher import Matcher, Mismatch, exactly_equal


class NoEntities:
    def value(self, name):
        return {"saved": 7}[name]

    def session_lsid(self, name):
        raise Mismatch(f"no session {name}")


ROOT_CASES = [
    # (description, expected, actual, matches)
    ("equal scalars", 1, 1, True),
    ("int matches double of the same value", 1, 1.0, True),
    ("int matches long of the same value", 1, Int64(1), True),
    ("numbers of different values", 1, 1.5, False),
    ("bool is not a number", 1, True, False),
    ("string vs int", "1", 1, False),
    ("null vs missing value", None, 0, False),
    ("extra field at root", {"x": 1}, {"x": 1, "y": 2}, True),
    ("missing field at root", {"x": 1, "y": 1}, {"x": 1}, False),
    ("extra field nested", {"x": {"y": 1}}, {"x": {"y": 1, "z": 1}}, False),
    ("key order ignored", {"x": 1, "y": 2}, {"y": 2, "x": 1}, True),
    ("arrays of other lengths", [1, 2, 3], [1, 2, 3, 4], False),
    ("array order matters", [1, 2], [2, 1], False),
    ("root array elements are root documents", [{"x": 1}], [{"x": 1, "y": 1}], True),
    ("nested array elements are not root", {"a": [{"x": 1}]}, {"a": [{"x": 1, "y": 1}]}, False),
    ("$$exists true", {"x": {"$$exists": True}}, {"x": None}, True),
    ("$$exists true, missing", {"x": {"$$exists": True}}, {}, False),
    ("$$exists false", {"x": {"$$exists": False}}, {}, True),
    ("$$exists false, present", {"x": {"$$exists": False}}, {"x": 1}, False),
    ("$$exists false nested", {"a": {"x": {"$$exists": False}}}, {"a": {}}, True),
    ("$$type int", {"x": {"$$type": "int"}}, {"x": 5}, True),
    ("$$type int is not long", {"x": {"$$type": "int"}}, {"x": Int64(5)}, False),
    ("$$type list", {"x": {"$$type": ["int", "long"]}}, {"x": Int64(5)}, True),
    ("$$type missing", {"x": {"$$type": "string"}}, {}, False),
    ("$$type objectId", {"x": {"$$type": "objectId"}}, {"x": ObjectId()}, True),
    ("$$type object", {"x": {"$$type": "object"}}, {"x": [1]}, False),
    ("$$unsetOrMatches unset", {"x": {"$$unsetOrMatches": 1}}, {}, True),
    ("$$unsetOrMatches matches", {"x": {"$$unsetOrMatches": 1}}, {"x": 1}, True),
    ("$$unsetOrMatches differs", {"x": {"$$unsetOrMatches": 1}}, {"x": 2}, False),
    ("$$unsetOrMatches whole result", {"$$unsetOrMatches": {"n": 1}}, {"n": 2}, False),
    ("$$matchesEntity", {"x": {"$$matchesEntity": "saved"}}, {"x": 7}, True),
    ("$$matchesEntity differs", {"x": {"$$matchesEntity": "saved"}}, {"x": 8}, False),
    ("$$lte", {"x": {"$$lte": 5}}, {"x": 5}, True),
    ("$$lte above", {"x": {"$$lte": 5}}, {"x": 6}, False),
]

EXACT_CASES = [
    ("same documents", [{"_id": 1, "x": 1}], [{"x": 1, "_id": 1}], True),
    ("int is not double", [{"_id": 1, "x": 1}], [{"_id": 1, "x": 1.0}], False),
    ("int is not long", [{"_id": 1, "x": 1}], [{"_id": 1, "x": Int64(1)}], False),
    ("large int is a long", [{"_id": 1, "x": 2**40}], [{"_id": 1, "x": Int64(2**40)}], True),
    ("extra field", [{"_id": 1}], [{"_id": 1, "x": 1}], False),
    ("missing document", [{"_id": 1}, {"_id": 2}], [{"_id": 1}], False),
    ("special operators are plain fields", [{"_id": {"$$exists": True}}], [{"_id": 1}], False),
]


class MatcherRules(unittest.TestCase):
    def test_evaluating_matches(self):
        matcher = Matcher(NoEntities())
        for description, expected, actual, matches in ROOT_CASES:
            with self.subTest(description):
                if matches:
                    matcher.match(expected, actual)
                else:
                    with self.assertRaises(Mismatch):
                        matcher.match(expected, actual)

    def test_unset_result(self):
        matcher = Matcher(NoEntities())
        matcher.match({"$$unsetOrMatches": {"n": 1}}, None, present=False)
        with self.assertRaises(Mismatch):
            matcher.match({"n": 1}, None, present=False)

    def test_collection_contents_are_exact(self):
        for description, expected, actual, matches in EXACT_CASES:
            with self.subTest(description):
                if matches:
                    exactly_equal(expected, actual)
                else:
                    with self.assertRaises(Mismatch):
                        exactly_equal(expected, actual)


if __name__ == "__main__":
    unittest.main()
