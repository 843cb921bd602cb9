"""Operation parameters as Rally tracks write them: JSON values or strings, garbage named, never defaulted."""

from __future__ import annotations

import pytest

from bench.driver.param_types import ParamError, as_bool, as_float, as_int, param_bool, param_float, param_int
from bench.driver.runners.core import with_retries


@pytest.mark.parametrize("value,expected", [(True, True), ("true", True), ("TRUE", True), ("1", True), (1, True),
                                            (False, False), ("false", False), ("0", False), (0, False)])
def test_booleans_as_rally_writes_them(value, expected):
    assert as_bool(value, "p") is expected


def test_numbers_as_strings_and_defaults():
    assert as_int("5", "p") == 5 and as_int(5.0, "p") == 5 and as_float("0.5", "p") == 0.5
    assert param_int({}, "retries", 3) == 3 and param_float({"t": "2"}, "t", 1.0) == 2.0
    assert param_bool({"x": None}, "x", True) is True


@pytest.mark.parametrize("fn,value", [(as_bool, "maybe"), (as_bool, 2), (as_int, "1.5"), (as_int, True),
                                      (as_float, "fast"), (as_float, None)])
def test_garbage_is_an_error_naming_the_parameter(fn, value):
    with pytest.raises(ParamError, match=r"operation parameter 'retries' is .*: expected"):
        fn(value, "retries")


def test_retry_flags_written_as_strings_mean_what_they_say():
    async def runner(ctx, p):  # pragma: no cover - never called here
        raise AssertionError

    # bool("false") is True: the old reading wrapped this runner in retries.
    assert with_retries(runner, {"retry-until-success": "false"}) is runner
    assert with_retries(runner, {"retry-until-success": "true"}) is not runner
    with pytest.raises(ParamError, match="'retries' is 'many'"):
        with_retries(runner, {"retries": "many"})


def test_bulk_looped_false_as_a_string_ends_with_the_corpus(tmp_path):
    from bench.driver.param_sources import bulk_source
    from bench.track.generators import generate_file
    from bench.track.model import DocumentsSpec, Operation, Task

    d = DocumentsSpec(source_file="geo.json", document_count=10, target_index="geo")
    d.local_path = generate_file("geopoint", 1, 10, tmp_path / "geo.json")
    for looped, n in (("false", 2), ("true", 7)):
        op = Operation(name="b", operation_type="bulk", params={"bulk-size": 5, "looped": looped})
        src = bulk_source(Task(name="b", operation=op), [d], client=0, gzip_bodies=False, default_index=None)
        # bool("false") is True: the old reading cycled the corpus for ever.
        assert len([b for _, b in zip(range(7), src)]) == n
    op = Operation(name="b", operation_type="bulk", params={"bulk-size": 5, "looped": "sometimes"})
    with pytest.raises(ParamError, match="'looped' is 'sometimes'"):
        bulk_source(Task(name="b", operation=op), [d], client=0, gzip_bodies=False, default_index=None)
