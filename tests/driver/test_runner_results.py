"""What a track's runner returns, counted as Rally's ``execute_single`` (esrally/driver/driver.py) counts it."""

from __future__ import annotations

import pytest

from bench.driver.runners.custom import TrackCodeError, to_result
from bench.track.plugins import RunnerRegistration


async def _runner(es, params):  # the registered callable; only its name is used in messages
    return None


REG = RunnerRegistration("stop-trained-model-deployment", _runner, False)


@pytest.mark.parametrize("value", [None, True, False, "acknowledged", 7, [1, 2], (1, 2, 3), object()])
def test_any_other_value_is_one_successful_operation(value):
    # elser-ingest-speedtest's stop_trained_model_deployment returns a bool: Rally counts one operation
    res = to_result(value, REG)
    assert (res.units, res.unit, res.success, res.error_type) == (1, "ops", True, None)


def test_a_pair_is_weight_and_unit():
    res = to_result((500, "docs"), REG)
    assert (res.units, res.unit, res.success) == (500, "docs", True)


def test_a_dict_gives_weight_unit_success_and_meta():
    res = to_result({"weight": 3, "unit": "docs", "success": False, "error-type": "bulk", "took": 7}, REG)
    assert (res.units, res.unit, res.success, res.error_type, res.failed_units, res.meta) == \
        (3, "docs", False, "bulk", 3, {"took": 7})
    assert to_result({}, REG).success is True and to_result({}, REG).units == 1


@pytest.mark.parametrize("success, expected", [(0, False), (1, True), ("", False), (None, False)])
def test_success_is_read_for_its_truth_as_rally_reads_it(success, expected):
    assert to_result({"success": success}, REG).success is expected


@pytest.mark.parametrize("weight", [-1, 1.5, "many", float("nan")])
def test_a_weight_bench_cannot_count_whole_is_one_line_not_a_rounded_number(weight):
    with pytest.raises(TrackCodeError, match="weight"):
        to_result({"weight": weight}, REG)
