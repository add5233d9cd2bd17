"""The pages' number filter writes exactly what Django's floatformat wrote before it, for every
kind of value a template hands it (floats, ties, negative zero, strings, junk)."""
from __future__ import annotations

import pytest
from django.template import Context, Template
from django.template.defaultfilters import floatformat
from hypothesis import given, settings, strategies as st

from scoring.templatetags.evasite_ui import fixed

EDGES = [0, 0.0, -0.0, 0.125, 2.5, -2.5, 0.05, -0.04, 0.995, 1.005, 2.675, 1e20, 1e-7, -0.0001, 10**25, 7, -7,
         float("inf"), float("-inf"), float("nan"), "3.14159", "-0.5", "abc", "", None, [1]]


@pytest.mark.parametrize("value", EDGES, ids=repr)
@pytest.mark.parametrize("places", [0, 1, 2, 3])
def test_edge_values_read_as_floatformat_wrote_them(value, places):
    assert fixed(value, places) == str(floatformat(value, places))


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.floats(allow_nan=False, width=64), st.integers(-10**9, 10**9).map(lambda n: n / 1000),
                 st.decimals(allow_nan=False, allow_infinity=False, places=4).map(str)),
       st.integers(0, 3))
def test_any_number_reads_as_floatformat_wrote_it(value, places):
    assert fixed(value, places) == str(floatformat(value, places))


def test_templates_load_it_with_the_other_helpers():
    rendered = Template("{% load evasite_ui %}{{ a|fixed:1 }} {{ b|fixed:0 }} {{ c|fixed:2 }}").render(
        Context({"a": 0.25, "b": 2.5, "c": None}))
    assert rendered == "0.3 3 "
