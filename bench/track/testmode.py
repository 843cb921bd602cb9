"""Test mode (Rally's --test-mode): shrink a track so it runs in seconds and shows that it works.

1000 documents per document set, no warmup (and so no ramp-up), time periods of at most 10 s, at most one iteration per
client, and no throttling (an arrival-rate task keeps its rate, its stages cut to 10 s in all). Waits
(retry-until-success, cluster health, recovery, snapshots, async searches) end after
30 s instead of bench's 600 s unless the track sets ``retry-max-duration``: a test run that cannot get there says so
quickly.
"""

from __future__ import annotations

from bench.track.model import TEST_MODE_DOCS, Track

TEST_MODE_MAX_TIME_PERIOD = 10.0
TEST_MODE_MAX_WAIT = 30.0


def apply_test_mode(track: Track) -> Track:
    """Shrink ``track`` in place (and return it) following Rally's test-mode rules."""
    from bench.track.plugins import plugins_of

    code = plugins_of(track)
    for corpus in track.corpora:
        for docs in corpus.documents:
            docs.document_count = min(docs.document_count, TEST_MODE_DOCS)
            # Sizes refer to the full corpus and no longer apply.
            docs.compressed_bytes = None
            docs.uncompressed_bytes = None
    for challenge in track.challenges:
        for task in challenge.tasks():
            if task.warmup_time_period is not None:
                task.warmup_time_period = 0
                task.ramp_up_time_period = None  # ramp-up must fit in the warmup (Rally does the same)
            if task.time_period is not None:
                task.time_period = min(task.time_period, TEST_MODE_MAX_TIME_PERIOD)
                if task.ramp_down_time_period is not None:  # it must fit in the time period
                    task.ramp_down_time_period = min(task.ramp_down_time_period, task.time_period)
            if task.warmup_iterations is not None:
                task.warmup_iterations = 0
            if task.iterations is not None:
                # Iterations count per client (Rally: "iterations that each client executes").
                task.iterations = 1
            task.target_throughput = None
            task.target_interval = None
            if task.arrival is not None:  # an open model keeps its rate (it is the schedule) for less time
                task.arrival = task.arrival.shortened(TEST_MODE_MAX_TIME_PERIOD)
            own = code is not None and code.runs(task.operation.operation_type)  # track code: its params as given
            if not own and "retry-max-duration" not in task.operation.params:
                params = {**task.operation.params, "retry-max-duration": TEST_MODE_MAX_WAIT}
                task.operation = task.operation.model_copy(update={"params": params})
    return track
