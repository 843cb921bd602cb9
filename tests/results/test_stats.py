"""Statistics against hand-computed data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bench.driver.samples import RequestSample
from bench.results.stats import (
    error_stats,
    measured_duration,
    percentiles,
    percentiles_for_sample_size,
    samples_frame,
    throughput_series,
    throughput_stats,
)


def sample(task="t", *, start=0.0, latency=0.1, service=None, units=1, unit="ops", success=True,
           warmup=False, failed_units=0, error=None) -> RequestSample:
    return RequestSample(task, task, "search", 0, start, start + latency, latency,
                         latency if service is None else service, units, unit, 100, success,
                         error, warmup, failed_units)


@pytest.mark.parametrize("n,expected", [
    (0, []), (1, [100]), (2, [50, 100]), (9, [50, 100]), (10, [50, 90, 100]), (99, [50, 90, 100]),
    (100, [50, 90, 99, 100]), (999, [50, 90, 99, 100]), (1000, [50, 90, 99, 99.9, 100]),
    (9999, [50, 90, 99, 99.9, 100]), (10000, [50, 90, 99, 99.9, 99.99, 100]),
])
def test_percentiles_for_sample_size_follows_rally(n, expected):
    assert percentiles_for_sample_size(n) == expected


def test_percentiles_linear_interpolation_by_hand():
    # 1..10: rank = p/100 * (n-1); p50 -> 5.5, p90 -> 9.1, p100 -> 10, p0 -> 1.
    got = percentiles(list(range(1, 11)), [0, 50, 90, 100])
    assert got == pytest.approx({0.0: 1.0, 50.0: 5.5, 90.0: 9.1, 100.0: 10.0})
    assert percentiles([7.0], [50, 100]) == {50.0: 7.0, 100.0: 7.0}
    assert percentiles([], [50]) == {}
    assert percentiles([1.0, float("nan"), 3.0], [50]) == {50.0: 2.0}
    # Order of input must not matter.
    rng = np.random.default_rng(1)
    vals = rng.exponential(size=1001)
    assert percentiles(vals, [99]) == percentiles(sorted(vals), [99])
    with pytest.raises(ValueError):
        percentiles([1, 2], [101])


def test_throughput_series_buckets_by_completion_and_leaves_out_the_partial_last_bucket():
    # 10 requests per second for 3 s, each 0.05 s latency, then one request completing at 3.2 s.
    s = [sample(start=100.0 + k * 0.1, latency=0.05) for k in range(30)]
    s.append(sample(start=103.1, latency=0.1))
    series = throughput_series(samples_frame(s), "t")
    m = series[series["phase"] == "measurement"]
    # Phase starts at 100.0 (first scheduled start) and ends at 103.2: buckets 0,1,2 full; the 0.2 s
    # bucket 3 is not in the series, nor in the mean: its one request over 0.2 s would overstate the rate.
    assert list(m["second"]) == [0, 1, 2]
    assert list(m["complete"]) == [True, True, True]
    assert list(m["units"]) == pytest.approx([10, 10, 10])
    assert set(series["phase"]) == {"measurement"}
    assert throughput_stats(samples_frame(s), "t").rate == pytest.approx(30 / 3)


def test_paced_schedule_shows_its_target_in_every_bucket_including_the_ends():
    # 20 ops/s for 5 s, each request served in 0.01 s: the last completion is at 4.96 s, so bucket 4 lasts
    # 0.96 s and holds 20 requests (20.8/s when divided by its 0.96 s, as the series used to show).
    s = [sample(start=50.0 + k * 0.05, latency=0.01, service=0.01) for k in range(100)]
    series = throughput_series(samples_frame(s), "t")
    assert list(series["second"]) == [0, 1, 2, 3]
    assert list(series["throughput"]) == pytest.approx([20.0] * 4)
    st = throughput_stats(samples_frame(s), "t")
    assert (st.min, st.median, st.max) == pytest.approx((20.0, 20.0, 20.0))
    # The measured-part rate over the same whole seconds: 100 requests over 4.96 s read 20.16 (N requests span
    # N - 1 intervals plus one latency), the paced Mean Throughput users saw above its target.
    assert st.rate == pytest.approx(20.0) and st.mean == pytest.approx(20.0)
    # Requests whose service interval crosses a bucket edge give each second its share: 0.02 s queueing,
    # 0.04 s service, so the request due at k+0.95 is served from k+0.97 to k+1.01 (3/4 in second k).
    # The last completion is at 5.01 s: the 0.01 s bucket 5 is left out, bucket 4 keeps its 3/4 share.
    s = [sample(start=50.0 + k * 0.05, latency=0.06, service=0.04) for k in range(100)]
    series = throughput_series(samples_frame(s), "t")
    assert list(series["units"]) == pytest.approx([19.75, 20.0, 20.0, 20.0, 20.0])
    assert series["complete"].all()


def test_throughput_series_keeps_empty_seconds_and_separates_warmup():
    s = [sample(start=0.0, warmup=True), sample(start=0.5, warmup=True),
         sample(start=10.0, latency=0.5), sample(start=12.6, latency=0.4)]  # nothing completes in second 1
    series = throughput_series(samples_frame(s), "t")
    w = series[series["phase"] == "warmup"]
    m = series[series["phase"] == "measurement"]
    assert list(w["units"]) == [2]  # 0.0..0.6: one partial bucket
    assert list(m["units"]) == pytest.approx([1, 0, 1])
    assert list(m["complete"]) == [True, True, True]  # 10.0 .. 13.0 is exactly 3 s
    assert throughput_series(samples_frame(s), "other").empty


def test_throughput_stats_are_the_running_mean_and_rate_is_the_work_of_the_whole_measured_seconds():
    # Bulk: 1000 docs per request, 4 requests in second 0, 2 in second 1, and 1 at 2.5 s.
    starts = [0.0, 0.2, 0.4, 0.6, 1.1, 1.5, 2.4]
    s = [sample("bulk", start=100 + x, latency=0.1, units=1000, unit="docs") for x in starts]
    st = throughput_stats(samples_frame(s), "bulk")
    assert st is not None
    assert st.unit == "docs/s"
    assert st.rule == "rally-running-mean"
    # Per second [4000, 2000] (the 0.5 s partial third second is not a bucket); the running mean since the
    # first request at the end of each whole second: 4000/1, 6000/2.
    series = throughput_series(samples_frame(s), "bulk")
    assert list(series["throughput"]) == pytest.approx([4000, 2000])
    assert list(series["running_mean"]) == pytest.approx([4000, 3000])
    assert (st.min, st.median, st.max) == pytest.approx((3000.0, 3500.0, 4000.0))
    assert st.mean == pytest.approx(3500.0)  # Rally's: the mean of the running means
    assert st.rate == pytest.approx(6000 / 2)  # the whole seconds, as the buckets
    assert measured_duration(samples_frame(s)) == pytest.approx(2.5)


def test_running_mean_starts_at_the_tasks_first_request_as_rallys_does():
    # 2 s of warmup at 100 ops/s, then 3 s measured at 200 ops/s (instantaneous requests, 0.01 s apart
    # or 0.005 s apart). Rally's figure at the end of measured second k is all work since the task's first
    # request over the time since then: (200 + 200k) / (2 + k).
    s = [sample(start=x / 100, latency=0.0, service=0.0, warmup=True) for x in range(200)]
    s += [sample(start=2.0 + x / 200, latency=0.0, service=0.0) for x in range(600)]
    st = throughput_stats(samples_frame(s), "t")
    expected = [(200 + 200 * k) / (2 + k) for k in (1, 2, 3)]
    m = throughput_series(samples_frame(s), "t").query("phase == 'measurement'")
    assert list(m["running_mean"][:2]) == pytest.approx(expected[:2], rel=0.01)
    assert st.min == pytest.approx(expected[0], rel=0.01)
    # The per-second series itself is the measured phase's rate only.
    assert list(m["throughput"]) == pytest.approx([200, 200], rel=0.01)
    assert st.rate == pytest.approx(600 / 2.995, rel=0.01)
    # The four figures are Rally's and hold together: a slower warmup keeps every running mean, and so their
    # mean, below the measured part's own rate (reading Mean above Max, as bench once did, contradicts itself).
    running = list(m["running_mean"])
    assert st.mean == pytest.approx(sum(running) / len(running))
    assert st.min <= st.median <= st.max and st.min <= st.mean <= st.max < st.rate


def test_requests_in_flight_at_the_warmup_boundary_count_in_the_seconds_they_were_served():
    # Two clients, each sending back-to-back 1 s bulks of 1000 docs from 0 to 6 s, offset by 0.5 s; warmup
    # ends at 2 s. The bulk of client 1 served 1.5..2.5 s is a warmup sample, but half of it was done in the
    # first measured second: the cluster indexed 2000 docs in every second.
    s = []
    for client, offset in ((0, 0.0), (1, 0.5)):
        for k in range(6):
            start = offset + k
            s.append(sample("b", start=start, latency=1.0, units=1000, unit="docs", warmup=start < 2.0)
                     ._replace(client_id=client))
    series = throughput_series(samples_frame(s), "b")
    m = series[series["phase"] == "measurement"]
    # Measured from 2.0 to 6.5 s: four whole seconds (the old rule, counting measured samples only, read 1500
    # in the first).
    assert list(m["throughput"]) == pytest.approx([2000, 2000, 2000, 2000])
    assert list(m["second"]) == [0, 1, 2, 3]
    # The mean is the work done in the measured whole seconds, 2.0 to 6.0 s: client 1's warmup bulk did 500 docs
    # of it, the rest came from the measured bulks (the measured bulks' units alone over 2.0..6.5 s read 1,778;
    # all work to the last completion, the drain included, 1,889).
    assert throughput_stats(samples_frame(s), "b").rate == pytest.approx(8000 / 4)


def test_throughput_stats_short_phase_is_one_bucket_over_its_span():
    s = [sample(start=5.0, latency=0.25), sample(start=5.1, latency=0.15)]
    st = throughput_stats(samples_frame(s), "t")
    assert st is not None
    assert st.min == st.max == st.median == pytest.approx(2 / 0.25)
    assert (st.mean, st.rate) == pytest.approx((8.0, 8.0))
    only_warmup = samples_frame([sample(start=0.0, warmup=True)])
    assert throughput_stats(only_warmup, "t") is None


def test_error_stats_counts_requests_and_bulk_items():
    s = [sample("b", units=100, unit="docs"),                       # ok
         sample("b", units=100, unit="docs", failed_units=3),       # bulk with 3 failed items
         sample("b", units=100, unit="docs", success=False, error="transport 503"),  # whole request failed
         sample("b", units=100, unit="docs")]
    e = error_stats(samples_frame(s))
    assert (e.requests, e.failed_requests) == (4, 2)
    assert e.error_rate == 0.5
    assert (e.units, e.failed_units) == (400, 103)
    assert e.unit_error_rate == pytest.approx(103 / 400)
    empty = error_stats(samples_frame([]))
    assert (empty.requests, empty.error_rate) == (0, 0.0)


def test_error_stats_tell_the_clusters_answers_from_unanswered_requests():
    s = [sample()._replace(status=200),
         sample(success=False, error="http-429")._replace(status=429),
         sample(success=False, error="http-429")._replace(status=429),
         sample(success=False, error="connection"),                      # no answer: status 0
         sample(success=False, error="timeout"),
         sample(units=10, unit="docs", failed_units=2)._replace(status=200)]  # items failed, no error type
    e = error_stats(samples_frame(s))
    assert e.failed_requests == 5
    assert e.by_type == {"connection": 1, "http-429": 2, "item-errors": 1, "timeout": 1}
    assert e.unanswered == 2
    assert error_stats(samples_frame([])).by_type == {}


def test_samples_frame_has_stable_columns_when_empty():
    df = samples_frame([])
    assert list(df.columns) == list(RequestSample._fields)
    assert isinstance(df, pd.DataFrame) and df.empty


def test_long_requests_spread_their_units_over_their_service_interval():
    # Two bulks of 3,000 docs, each served for 3 s, one after the other: 1,000 docs in each of 6 seconds,
    # not 3,000 in seconds 2 and 5 and nothing elsewhere.
    s = [sample(start=0.0, latency=3.0, units=3000, unit="docs"),
         sample(start=3.0, latency=3.0, units=3000, unit="docs")]
    series = throughput_series(samples_frame(s), "t")
    assert list(series["units"]) == pytest.approx([1000] * 6)
    assert series["units"].sum() == pytest.approx(6000)
    st = throughput_stats(samples_frame(s), "t")
    assert (st.min, st.median, st.max, st.mean) == pytest.approx((1000, 1000, 1000, 1000))


def test_queueing_time_is_not_counted_as_work():
    # Scheduled at 0 but served only from 2 to 3 (latency 3, service 1): all units land in second 2.
    s = [sample(start=0.0, latency=3.0, service=1.0, units=90)]
    series = throughput_series(samples_frame(s), "t")
    assert list(series["units"]) == pytest.approx([0, 0, 90])


def test_a_summary_stored_by_the_per_second_rule_is_recomputed_from_its_samples(tmp_path, monkeypatch):
    from bench.results.summary import summarize
    from bench.trials.sqlite import TrialInfo, TrialStore, utcnow
    from bench.trials.summary import stored_summary

    monkeypatch.setenv("BENCH_HOME", str(tmp_path))
    s = [sample("bulk", start=100 + x, latency=0.1, units=1000, unit="docs")
         for x in [0.0, 0.2, 0.4, 0.6, 1.1, 1.5, 2.4]]
    old = summarize(samples_frame(s))
    tp = old.tasks[0].throughput
    # As a bench before the running mean stored it: min/median/max of per-second rates, no rule recorded.
    stale = old.model_copy(update={"tasks": [old.tasks[0].model_copy(update={"throughput": tp.model_copy(
        update={"min": 2000.0, "median": 3000.0, "max": 4000.0, "rule": "per-second"})})]})
    with TrialStore() as store:
        store.create_trial(TrialInfo(id="t1", track="x", challenge="c", status="complete", start_time=utcnow()))
        store.add_samples("t1", s)
        store.set_summary("t1", stale)
        got = stored_summary(store, "t1").tasks[0].throughput
    assert got.rule == "rally-running-mean"
    assert (got.min, got.median, got.max) == pytest.approx((3000.0, 3500.0, 4000.0))
    # as stored by the rule before this one: the same min/median/max, the measured-part rate as its mean
    stale = old.model_copy(update={"tasks": [old.tasks[0].model_copy(update={"throughput": tp.model_copy(
        update={"mean": 3000.0, "rate": None, "rule": "running-mean"})})]})
    with TrialStore() as store:
        store.set_summary("t1", stale)
        got = stored_summary(store, "t1").tasks[0].throughput
    assert (got.rule, got.mean, got.rate) == ("rally-running-mean", pytest.approx(3500.0), pytest.approx(3000.0))
