"""What the coordinator and its load-driver workers say to each other, through a ``WorkerPool`` (multiprocessing
queues locally, actor calls on Ray): small frozen dataclasses, pickled on the way. The receiver matches on the
class (``match``/``isinstance``); the aliases ``Command`` and ``Message`` are every class of each direction.

coordinator -> worker (``Command``): ``Step(plan)``, then ``Go(start_at)`` once every worker is ``Ready``;
``Stop()`` lets in-flight requests finish (and records them), ``Cancel()`` (an interruption) cancels them, and they
are counted, never recorded as samples; ``EndStep()`` once the worker's ``StepDone`` is in; ``Shutdown()``.

worker -> coordinator (``Message``): ``Ready``, ``Samples`` (a batch: a message per flush, never per request),
``TaskDone``, ``Failure`` (the first failed request, with ``--on-error=abort``), ``WorkerError``, ``Cancelled``,
``StepDone``. Each names its worker (``wid``); a pool that can no longer deliver messages answers one
``WorkerError`` of ``POOL_WID``.

Bulk bodies are prepared between ``Step`` and ``Ready``; the clock starts only at ``Go``. A worker on a machine
other than the coordinator's (``prepare_corpora``) first prepares its step's document sets in its own data cache;
``Ready`` says how long that took.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

from bench.driver.bulk.step_corpora import CorporaPrepared, StepCorpora
from bench.driver.loop_load import LoopLoad
from bench.driver.runners.track_defs import TrackDefinitions
from bench.driver.samples import RequestSample, SampleFields
from bench.driver.track_code import TrackCodePlan
from bench.http.client import ClusterTarget
from bench.track.model import DocumentsSpec, Task

POOL_WID = -1  # the ``wid`` of a WorkerError from the pool itself rather than from one of its workers


@dataclass
class StepPlan:
    """One worker's share of a step."""

    step: int
    tasks: list[Task]
    # (index into tasks, client id within the task) for the clients this worker runs.
    clients: list[tuple[int, int]]
    targets: list[ClusterTarget]
    default_cluster: str
    documents: dict[str, list[DocumentsSpec]] = field(default_factory=dict)  # task name -> corpus files
    indices: dict[str, Any] = field(default_factory=dict)
    definitions: TrackDefinitions = field(default_factory=TrackDefinitions)
    report_failures: bool = False  # --on-error=abort: tell the coordinator about the first failure
    track_code: TrackCodePlan | None = None  # the track has a track.py: its runners, sources, schedulers
    corpora: StepCorpora | None = None  # how a worker on another machine prepares the documents itself


# -- coordinator -> worker --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Step:
    """Run this share of a step: prepare, answer ``Ready``, wait for ``Go``."""

    plan: StepPlan


@dataclass(frozen=True, slots=True)
class Go:
    """Start the step's clients at ``start_at``, a ``time.monotonic()`` of the worker's own clock."""

    start_at: float


@dataclass(frozen=True, slots=True)
class Stop:
    """End the step: clients send nothing more, in-flight requests are answered and recorded."""


@dataclass(frozen=True, slots=True)
class Cancel:
    """An interruption: in-flight requests are cancelled (counted in ``Cancelled``, never recorded)."""


@dataclass(frozen=True, slots=True)
class EndStep:
    """The coordinator has the worker's ``StepDone``: the worker waits for the next ``Step``."""


@dataclass(frozen=True, slots=True)
class Shutdown:
    """The worker loop ends."""


Command = Step | Go | Stop | Cancel | EndStep | Shutdown


# -- worker -> coordinator --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Ready:
    """Prepared (bodies built, connections open): waiting for ``Go``. ``prepared``: the worker prepared its step's
    document sets itself (another machine), and how long that took."""

    wid: int
    prepared: CorporaPrepared | None = None


@dataclass(frozen=True, slots=True)
class Samples:
    """The samples recorded since the worker's last batch (it flushes every ``FLUSH_INTERVAL``, every ``FLUSH_SAMPLES``
    and when a task's clients are done)."""

    wid: int
    batch: list[RequestSample]
    # The batch's columns already pickled by the worker's loop thread (``of``), so the transport's own thread
    # only copies bytes while it holds the GIL: pickling there made the loop wait for that thread to get the
    # GIL, run and give it back, a few milliseconds on a busy machine at every batch.
    columns: bytes | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, wid: int, fields: list[SampleFields]) -> Samples:
        """The message of a worker's buffered plain tuples (``SampleFields``). Every transport between a worker
        and the coordinator pickles it (a multiprocessing queue, Ray's return values), by columns, and the
        receiver rebuilds RequestSamples: ``batch`` holds RequestSamples wherever it is read."""
        columns = pickle.dumps(list(zip(*fields)), protocol=pickle.HIGHEST_PROTOCOL)
        return cls(wid, fields, columns)  # type: ignore[arg-type]  # pickled by columns, rebuilt on arrival

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled by columns: a third of the worker's cost of pickling each sample as a NamedTuple (its
        # __getnewargs__ is a Python call per sample); the receiver rebuilds the same samples.
        if self.columns is not None:
            return _samples_from_pickled, (self.wid, self.columns)
        return _samples_from_columns, (self.wid, list(zip(*self.batch)))


def _samples_from_columns(wid: int, columns: list[tuple[Any, ...]]) -> Samples:
    return Samples(wid, list(map(RequestSample._make, zip(*columns))))


def _samples_from_pickled(wid: int, columns: bytes) -> Samples:
    return _samples_from_columns(wid, pickle.loads(columns))  # the worker's own message


@dataclass(frozen=True, slots=True)
class TaskDone:
    """The worker's clients of ``task`` are done."""

    wid: int
    task: str


@dataclass(frozen=True, slots=True)
class Failure:
    """The worker's first failed request of the step (only with ``StepPlan.report_failures``)."""

    wid: int
    message: str


@dataclass(frozen=True, slots=True)
class WorkerError:
    """The step failed in the worker (or, with ``wid == POOL_WID``, the pool lost its workers)."""

    wid: int
    message: str


@dataclass(frozen=True, slots=True)
class Cancelled:
    """``count`` in-flight requests were cancelled by ``Cancel``."""

    wid: int
    count: int


@dataclass(frozen=True, slots=True)
class Arrivals:
    """The worker's dispatcher of arrival-rate ``task`` is done: of the iterations due in its measured part,
    ``scheduled`` were due and ``dropped`` found none of its clients free (sent before its ``TaskDone``)."""

    wid: int
    task: str
    operation_type: str
    scheduled: int
    dropped: int
    dropped_late: int = 0  # of dropped: the load driver's (see ``bench.driver.arrival_loop.ArrivalCount``)


@dataclass(frozen=True, slots=True)
class StepDone:
    """The worker finished the step (whatever happened): last message of a step. ``load``: how busy its event
    loop was from the step's start to its end (None when the step never started)."""

    wid: int
    load: LoopLoad | None = None


Message = Ready | Samples | TaskDone | Arrivals | Failure | WorkerError | Cancelled | StepDone
