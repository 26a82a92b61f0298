"""The keys after a trace's event array, found in its tail without parsing the events."""

from __future__ import annotations

import json

from kinetoscope.format.kineto.json_spans import metadata_after_array

EVENT = {"ph": "X", "name": "aten::mm", "args": {"Input Dims": [[], [2, 3]], "Input Strides": [[], []], "x": [{}]}}


def test_keys_after_the_array_even_when_they_hold_arrays() -> None:
    # GIVEN events full of "]" and "]," followed by keys that hold arrays of objects
    events = ",\n".join(json.dumps(EVENT, indent=2) for _ in range(50))
    tail = events + '\n], "deviceProperties": [{"id": 0}], "traceName": "t.json"\n}\n'
    # THEN the keys after the array are found whole, not those after an array inside them
    assert metadata_after_array(tail) == {"deviceProperties": [{"id": 0}], "traceName": "t.json"}


def test_array_at_the_end_and_what_is_not_metadata() -> None:
    assert metadata_after_array(json.dumps(EVENT) + "]}") == {}
    assert metadata_after_array(json.dumps(EVENT) + "], }") == {}  # a stray comma, as the standard parser reads it
    assert metadata_after_array('{"a": [1]}, {"b": 2}') is None  # no closing array
    assert metadata_after_array('[{"a": 1}], "traceEvents": 5}') is None  # that was before the array
