"""Redline's step in a race: the named task of the schedule is replaced by the search's steps (each run by the
coordinator like any task, its samples stored under the step's own name), and the summary gets the redline
section instead of one task row per step."""

from __future__ import annotations

from rich.console import Console
from tabulate import tabulate

from bench.driver.coordinator import RunStep
from bench.driver.samples import RequestSample
from bench.race.options import RaceOptions
from bench.race.pipeline import RaceHook, RacePlan, RaceSchedule, RaceTargets
from bench.redline.objective import OPTION, RedlineSpec, parse_redline
from bench.redline.search import Outcome, decide
from bench.redline.section import CURVE_HEADERS, SECTION, RedlineSection, curve_table, summary_line
from bench.redline.step import RunawayWatch, StepResult, evaluate_step, lowest_target, samples_frame, step_task
from bench.results.summary import Summary
from bench.track.model import Parallel, Task
from bench.util.errors import ConfigError


def spec_of(opts: RaceOptions) -> RedlineSpec | None:
    return parse_redline(opts.redline) if opts.redline else None


class RedlineHook(RaceHook):
    def __init__(self) -> None:
        self.spec: RedlineSpec | None = None
        self.section: RedlineSection | None = None
        self.console = Console()

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
        return race.opts

    async def drive_step(self, race: RaceSchedule, step: Task | Parallel, run: RunStep) -> bool:
        spec = self.spec
        if spec is None or not isinstance(step, Task) or step.name != spec.task:
            return False
        start = spec.start or (step.target_throughput if step.target_throughput and step.throughput_unit == "ops/s"
                               else float(step.clients))
        self.console.print(f"[bold]Redline[/bold] of {step.name}: {spec.objective}; steps of {spec.warmup_s:g} s "
                           f"warmup + {spec.measure_s:g} s measured, from {start:,.4g} requests/s", highlight=False)
        results: list[StepResult] = []
        floor = lowest_target(spec, step.clients)
        decision = decide(spec, [], start, floor)
        while decision.next_target is not None:
            target = decision.next_target
            task = step_task(step, target, len(results) + 1, spec)
            watch = RunawayWatch(spec, task.name, target, task.clients)
            taken: list[RequestSample] = []

            def see(batch: list[RequestSample], name: str = task.name, watch: RunawayWatch = watch,
                    taken: list[RequestSample] = taken) -> bool:
                taken.extend(s for s in batch if s.task == name)
                return watch.see(batch)

            if results and results[-1].target == target:
                self.console.print("  (the first step again: it took the cluster's cold start)", highlight=False)
            await run(task, see)
            result = evaluate_step(spec, len(results) + 1, task.name, target, samples_frame(taken), watch.reason)
            results.append(result)
            self.console.print(f"  step {result.step}: target {target:,.4g} req/s, achieved {result.achieved:,.4g} "
                               f"req/s ({result.throughput:,.0f} {result.unit}/s), p{spec.percentile:g} latency "
                               f"{result.latency_ms.get(f'{spec.percentile:g}', float('nan')):,.1f} ms, "
                               f"errors {result.error_rate * 100:.2g} %: "
                               + ("[green]met[/green]" if result.met else f"[red]{result.why}[/red]"),
                               highlight=False)
            decision = decide(spec, [Outcome(target=r.target, passed=r.met) for r in results], start, floor)
        self.section = RedlineSection(
            task=step.name, objective=spec.objective, percentile=spec.percentile, latency_ms=spec.latency_ms,
            max_error_rate=spec.max_error_rate, tolerance=spec.tolerance, warmup_s=spec.warmup_s,
            measure_s=spec.measure_s, steps=results, sustained=decision.passed, lowest_failing=decision.failed,
            converged=decision.converged, reason=decision.reason)
        data = self.section.model_dump(mode="json")
        # Plain text, never wrapped: a cut number in a curve is worse than a wide line.
        grid = tabulate(curve_table(data), headers=CURVE_HEADERS, tablefmt="simple", disable_numparse=True)
        self.console.print(f"{summary_line(data)}\n\n{grid}", markup=False, highlight=False, soft_wrap=True)
        return True

    def finish(self, race: RaceTargets, summary: Summary | None) -> Summary | None:
        if self.section is None or summary is None:
            return summary
        data = self.section.model_dump(mode="json")
        steps = {s.task for s in self.section.steps}
        # The steps are in the section (the curve); one task row each would bury the race's own tasks.
        summary = summary.model_copy(update={"tasks": [t for t in summary.tasks if t.task not in steps]})
        return summary.with_section(SECTION, data, notes=[summary_line(data)])
