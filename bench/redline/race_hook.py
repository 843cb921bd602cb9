"""Redline's step in a race: the named task of the schedule is replaced by the search's steps (each run by the
coordinator like any task, its samples stored under the step's own name), and the summary gets the redline
section instead of one task row per step."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from tabulate import tabulate

from bench.api import StepContext, StepObjective, StepWindow, step_objective_type
from bench.driver.coordinator import RunStep
from bench.driver.samples import RequestSample
from bench.race.options import RaceOptions
from bench.race.pipeline import RaceHook, RacePlan, RaceSchedule, RaceTargets
from bench.redline.objective import OPTION, RedlineSpec, parse_redline
from bench.redline.search import Outcome, decide
from bench.redline.section import SECTION, RedlineSection, curve_headers, curve_table, figures_text, summary_line
from bench.redline.step import (
    RunawayWatch,
    StepResult,
    evaluate_step,
    lowest_target,
    samples_frame,
    step_task,
    with_objectives,
)
from bench.results.summary import Summary
from bench.track.model import Parallel, Task, Track
from bench.util.errors import ConfigError


def spec_of(opts: RaceOptions) -> RedlineSpec | None:
    return parse_redline(opts.redline) if opts.redline else None


def step_objectives(spec: RedlineSpec) -> list[StepObjective]:
    """Fresh instances of the spec's step objectives (validated when the spec was parsed)."""
    out = []
    for key, value in spec.objectives.items():
        kind = step_objective_type(key)
        if kind is None:
            raise ConfigError(f"{OPTION}: step objective '{key}' is not registered (its extension is not loaded)")
        out.append(kind.parse(value))
    return out


def step_window(taken: list[RequestSample]) -> StepWindow | None:
    """When the step's load ran, from its own requests (None when it sent none)."""
    if not taken:
        return None
    measured = [s.absolute_time for s in taken if not s.warmup]
    return StepWindow(started=min(s.absolute_time for s in taken),
                      measured_from=min(measured) if measured else max(s.absolute_time + s.latency for s in taken),
                      ended=max(s.absolute_time + s.latency for s in taken))


async def _settle(objectives: list[StepObjective], timeout_s: float) -> str:
    """Every objective's leftovers of the previous step cleared before the next starts; else why the search
    stops (a next step would inherit them, and its figure would not be its own)."""
    for o in objectives:
        line = await o.settle(timeout_s)
        if line:
            return f"stopped before the next step: {line}"
    return ""


class RedlineHook(RaceHook):
    def __init__(self) -> None:
        self.spec: RedlineSpec | None = None
        self.section: RedlineSection | None = None
        self.console = Console()
        self.track: Track | None = None

    def before_provisioning(self, race: RacePlan) -> None:
        self.spec = spec_of(race.opts)
        if self.spec is None:
            return
        tops = [s.name for s in race.challenge.schedule if isinstance(s, Task)]
        if self.spec.task not in tops:
            nested = any(t.name == self.spec.task for t in race.challenge.tasks())
            raise ConfigError(f"{OPTION}: task '{self.spec.task}' "
                              + ("runs in a parallel block; a redline needs a task of its own"
                                 if nested else f"is not in challenge '{race.challenge.name}' (tasks: "
                                 f"{', '.join(tops) or 'none'})"))

    def prepare(self, race: RaceTargets) -> RaceOptions:
        self.console = race.console
        self.track = race.track
        return race.opts

    async def drive_step(self, race: RaceSchedule, step: Task | Parallel, run: RunStep) -> bool:
        spec = self.spec
        if spec is None or not isinstance(step, Task) or step.name != spec.task:
            return False
        start = spec.start or (step.target_throughput if step.target_throughput and step.throughput_unit == "ops/s"
                               else float(step.clients))
        objectives = step_objectives(spec)
        cooldown = spec.cooldown_s if spec.cooldown_s is not None else max(
            (o.cooldown_s for o in objectives), default=0.0)
        self.console.print(f"[bold]Redline[/bold] of {step.name}: {spec.objective}; steps of {spec.warmup_s:g} s "
                           f"warmup + {spec.measure_s:g} s measured" + (f" + {cooldown:g} s cool-down" if cooldown
                                                                        else "")
                           + f", from {start:,.4g} requests/s", highlight=False)
        results: list[StepResult] = []
        floor = lowest_target(spec, step.clients)
        decision = decide(spec, [], start, floor)
        stopped = ""
        try:
            assert self.track is not None or not objectives, "prepare() runs before the schedule"
            for o in objectives:
                await o.prepare(StepContext(targets=race.targets, track=self.track, task=step))  # type: ignore[arg-type]
            while decision.next_target is not None:
                if results and objectives:
                    stopped = await _settle(objectives, max(30.0, spec.warmup_s + spec.measure_s))
                    if stopped:
                        break
                result = await self._step(spec, step, decision.next_target, len(results) + 1, run, objectives,
                                          cooldown, repeat=bool(results) and results[-1].target == decision.next_target)
                results.append(result)
                decision = decide(spec, [Outcome(target=r.target, passed=r.met) for r in results], start, floor)
        finally:
            for o in objectives:
                await o.close()
        self.section = RedlineSection(
            task=step.name, objective=spec.objective, percentile=spec.percentile, latency_ms=spec.latency_ms,
            max_error_rate=spec.max_error_rate, tolerance=spec.tolerance, warmup_s=spec.warmup_s,
            measure_s=spec.measure_s, cooldown_s=cooldown, steps=results, sustained=decision.passed,
            lowest_failing=decision.failed, converged=decision.converged and not stopped,
            reason=stopped or decision.reason)
        data = self.section.model_dump(mode="json")
        # Plain text, never wrapped: a cut number in a curve is worse than a wide line.
        grid = tabulate(curve_table(data), headers=curve_headers(data), tablefmt="simple", disable_numparse=True)
        self.console.print(f"{summary_line(data)}\n\n{grid}", markup=False, highlight=False, soft_wrap=True)
        return True

    async def _step(self, spec: RedlineSpec, step: Task, target: float, number: int, run: RunStep,
                    objectives: list[StepObjective], cooldown: float, repeat: bool) -> StepResult:
        """One step at ``target``: the task paced, its step objectives watching, then their cool-down."""
        task = step_task(step, target, number, spec)
        watch = RunawayWatch(spec, task.name, target, task.clients)
        taken: list[RequestSample] = []

        def see(batch: list[RequestSample], name: str = task.name) -> bool:
            taken.extend(s for s in batch if s.task == name)
            return watch.see(batch)

        if repeat:
            self.console.print("  (the first step again: it took the cluster's cold start)", highlight=False)
        for o in objectives:
            await o.start(number)
        await run(task, see)
        window = step_window(taken)
        verdicts = [await o.finish(cooldown, window) for o in objectives]
        result = with_objectives(evaluate_step(spec, number, task.name, target, samples_frame(taken), watch.reason),
                                 verdicts)
        extra = f", {figures_text(result)}" if result.objectives else ""
        self.console.print(f"  step {result.step}: target {target:,.4g} req/s, achieved {result.achieved:,.4g} "
                           f"req/s ({result.throughput:,.0f} {result.unit}/s), p{spec.percentile:g} latency "
                           f"{result.latency_ms.get(f'{spec.percentile:g}', float('nan')):,.1f} ms, "
                           f"errors {result.error_rate * 100:.2g} %{extra}: "
                           + ("[green]met[/green]" if result.met else f"[red]{escape(result.why)}[/red]"),
                           highlight=False)
        return result

    def finish(self, race: RaceTargets, summary: Summary | None) -> Summary | None:
        if self.section is None or summary is None:
            return summary
        data = self.section.model_dump(mode="json")
        steps = {s.task for s in self.section.steps}
        # The steps are in the section (the curve); one task row each would bury the race's own tasks.
        summary = summary.model_copy(update={"tasks": [t for t in summary.tasks if t.task not in steps]})
        return summary.with_section(SECTION, data, notes=[summary_line(data)])
