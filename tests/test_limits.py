"""unipo_build.core.limits: the bounds every input stays within, checked on hand-picked values."""

from __future__ import annotations

import re

import pytest

from unipo_build.core import limits as L


def test_numbers_within_bounds_pass_and_others_are_named():
    assert L.number_problem(1e15) is None and L.number_problem(-1e15) is None and L.number_problem(True) is None
    assert L.number_problem(2**53 - 1) is None and L.number_problem(-(2**53 - 1)) is None
    assert L.number_problem(1.0000001e15) == "1000000100000000.0 is outside \u00b11e15, the range the site's math carries"
    assert L.number_problem(float("nan")) == "NaN or infinity is not allowed here"
    assert L.number_problem(2**53).startswith("an integer of 16 digits is outside \u00b1(2^53 - 1)")


def test_strings_surrogates_and_lengths():
    assert L.string_problem("ok \u202e \x00 \U0001f600") is None
    assert L.string_problem("ab\ud800c") == "holds a lone surrogate U+D800 at character 2, which is not Unicode text"
    assert L.string_problem("x" * 201, L.NAME_MAX) == "is 201 characters long; at most 200 are allowed"


def test_problems_are_found_everywhere_with_their_location():
    doc = {"a": [1, {"b": float("inf")}], "c": {"\udfff": 1, "d": "x\ud83d"}, "e": 10**20,
           "f": {"x": {"x": {"x": {}}}}}
    found = dict(L.problems(doc))
    assert found == {("a", 1, "b"): "NaN or infinity is not allowed here",
                     ("c",): "a key holds a lone surrogate U+DFFF at character 0, which is not Unicode text",
                     ("c", "d"): "holds a lone surrogate U+D83D at character 1, which is not Unicode text",
                     ("e",): found[("e",)]}
    deep: dict = {}
    for _ in range(L.MAX_DEPTH + 1):
        deep = {"x": deep}
    assert [m for _, m in L.problems(deep)] == [f"nested deeper than {L.MAX_DEPTH} levels"]
    assert list(L.problems(list(range(10)), max_nodes=5)) == [((), "holds more than 5 values")]


@pytest.mark.parametrize("bad, at, message", [
    (float("nan"), 2, "NaN or infinity is not allowed here"),
    (float("-inf"), 2, "NaN or infinity is not allowed here"),
    (1.5e15, 2, "1500000000000000.0 is outside \u00b11e15, the range the site's math carries"),
    (1e308, 2, "1e+308 is outside \u00b11e15, the range the site's math carries"),
    (2**53, 2, "an integer of 16 digits is outside \u00b1(2^53 - 1), the range JavaScript holds exactly"),
    ("x\ud800", 2, "holds a lone surrogate U+D800 at character 1, which is not Unicode text"),
])
def test_a_token_array_is_checked_at_once_and_its_bad_value_still_located(bad, at, message):
    """A list of plain numbers (a step file's token arrays) is checked in one pass; one bad value among
    them, of any kind, sends it down the value-by-value path, which names its index."""
    for plain in ([0.5, -1e15, 0.25, 1e15], [3, -(2**53 - 1), 7, 2**53 - 1]):
        assert list(L.problems({"logp": plain})) == []
        assert list(L.problems({"logp": plain[:at] + [bad] + plain[at:]})) == [(("logp", at), message)]
    assert list(L.problems([1e308, 1e308, 0.5])) == [((0,), "1e+308 is outside \u00b11e15, the range the site's math "
                                                      "carries"), ((1,), "1e+308 is outside \u00b11e15, the range the "
                                                                          "site's math carries")]
    assert list(L.problems([True, 2**60])) == [((1,), "an integer of 19 digits is outside \u00b1(2^53 - 1), the range "
                                                       "JavaScript holds exactly")]
    # Counted value by value all the same, containers included: a dict, its list and 3 values are 5.
    assert list(L.problems([0.5] * 10, max_nodes=5)) == [((), "holds more than 5 values")]
    assert list(L.problems({"a": [1] * 3}, max_nodes=5)) == []
    assert list(L.problems({"a": [1] * 4}, max_nodes=5)) == [((), "holds more than 5 values")]


def test_identifier_pattern():
    pattern = re.compile(L.IDENTIFIER)
    assert pattern.match("grpo-s1.v2_x") and pattern.match("A" * L.IDENTIFIER_MAX)
    for bad in ("", "-x", ".x", "a b", "a/b", "<img>", "A" * (L.IDENTIFIER_MAX + 1), "é"):
        assert not pattern.match(bad), bad


def test_bounds_as_the_docs_write_them():
    assert L.describe("MAX_MAGNITUDE") == "10<sup>15</sup>"
    assert L.describe("MAX_INT") == "2<sup>53</sup> \u2212 1"
    assert L.describe("LOGPROB_MIN") == "\u2212300" and L.describe("LOGPROB_MAX") == "0.001"
    assert L.describe("LINE_MAX") == "4,096"
    with pytest.raises(KeyError):
        L.describe("IDENTIFIER")  # a pattern, not a numeric bound


def test_schema_bounds_as_the_reference_tables_write_them():
    assert L.format_bound(1e15) == "10<sup>15</sup>" and L.format_bound(-1e15) == "\u221210<sup>15</sup>"
    assert L.format_bound(2**53 - 1) == "2<sup>53</sup> \u2212 1"
    assert L.format_bound(-(2**53 - 1)) == "\u2212(2<sup>53</sup> \u2212 1)"
    assert L.format_bound(-300.0) == "\u2212300" and L.format_bound(1e-3) == "0.001"
    assert L.format_bound(4096) == "4,096" and L.format_bound(1_000_000.0) == "1,000,000"
    assert L.format_bound(0.2) == "0.2" and L.format_bound(-0.5) == "\u22120.5" and L.format_bound(0) == "0"
