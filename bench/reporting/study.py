"""The study table of an experiment with a ``study:`` block (e.g. experiments/ccr-overhead.yml): a few key rows
-- Min/Median/Max throughput of each variant's indexing task, the 100th percentile CCR catch-up, per-cluster
CPU, disk IO and network -- with one column per variant, its Δ % against the baseline and compare's verdict.

Unlike ``bench compare``, which matches rows by (metric, task) name, a study row is read per variant: the
indexing task may be named differently in each variant's challenge (``index-append`` / ``index-append-leader``)
and the baseline's cluster (``default``) is matched with a candidate's (``leader``) through ``study.clusters``.
The verdicts are compare's own (``bench.compare.diff_ci``/``judge``), so both agree on what is noise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from bench.compare import Side, diff_ci, judge
from bench.compare.main_row import MAIN_ROW, find_task
from bench.compare.metrics import higher_is_better, trial_values
from bench.compare.stats import MIN_GROUP, CiMethod, Verdict
from bench.reporting.placement import PlacedTrial, placement_line, task_window, window_load
from bench.reporting.resolution import DEFAULT_EFFECT_PCT, Resolution, resolution_line, resolutions
from bench.reporting.study_followers import LAG_METRICS, catch_up, follower_lags
from bench.reporting.study_search import is_search_row, search_values
from bench.results.summary import Summary
from bench.trials.races import REPEATED_RACE

if TYPE_CHECKING:
    from bench.race.experiment import ExperimentFile, StudySpec
    from bench.trials.model import TrialReader

SYNC_OPERATION = "wait-for-followers-to-sync"
CATCH_UP_METRIC = "100th percentile CCR catch-up time"
# Per-cluster telemetry rows (bench/telemetry/section.py names them) and how a cluster's nodes add up.
CLUSTER_METRICS: tuple[tuple[str, str, str, bool], ...] = (
    # (row label, telemetry metric, unit, summed over nodes: else averaged)
    ("CPU (median, node-stats)", "Median CPU usage (node-stats)", "%", False),
    # per node process: on one machine the device-wide figures are the same for every cluster
    ("Disk read (node processes)", "Disk read (node processes)", "MB", True),
    ("Disk write (node processes)", "Disk write (node processes)", "MB", True),
    ("Network in (transport)", "Network rx (transport)", "MB", True),
    ("Network out (transport)", "Network tx (transport)", "MB", True),
    ("Network in (HTTP)", "Network rx (HTTP)", "MB", True),  # only engines that count HTTP bytes (not OpenSearch 2.x)
    ("Network out (HTTP)", "Network tx (HTTP)", "MB", True),
    # trials stored before disk and network rows were split
    ("Disk read", "Disk read", "MB", True),
    ("Disk write", "Disk write", "MB", True),
    ("Network in (rx)", "Network rx", "MB", True),
    ("Network out (tx)", "Network tx", "MB", True),
)

# The CCR drills' rows (bench/ccr/drill_section.py names them): study row label -> summary metric.
DRILL_METRICS: tuple[tuple[str, str], ...] = (
    ("CCR bootstrap: time to syncing", "CCR bootstrap time to syncing"),
    ("CCR bootstrap: transfer rate", "CCR bootstrap transfer rate"),
    ("CCR bootstrap: leader CPU", "CCR bootstrap leader CPU"),
    ("CCR failover: RTO", "CCR failover RTO"),
    ("CCR failover: RPO", "CCR failover RPO"),
)

Values = dict[str, tuple[float, str]]  # row label -> (value, unit) of one trial


class StudyCell(BaseModel):
    value: float | None = None  # mean over the variant's trials that have the row
    values: list[float] = []
    diff: float | None = None  # against the row's reference (the baseline, or the variant the row names)
    diff_pct: float | None = None  # None also when the reference is 0 (then only ``diff`` says the change)
    ci_pct: tuple[float, float] | None = None
    verdict: Verdict = "n/a"


class StudyRow(BaseModel):
    label: str
    unit: str
    higher_is_better: bool | None
    cells: list[StudyCell]  # one per variant, baseline first
    reference: str  # the variant Δ % is taken against
    key: bool = True  # a key row of the study (history follows these)


class StudyTable(BaseModel):
    experiment: str
    run_id: str
    variants: list[str]  # baseline first
    trials: list[int]  # trials per variant
    rows: list[StudyRow]
    # What a reader must know before the numbers: where the clusters ran and what they shared, and how many
    # trials each variant has when that is too few for a verdict.
    lead: list[str] = []
    notes: list[str] = []
    # Lines right under the table: what the study could resolve (bench.reporting.resolution), what ended its
    # repetitions.
    after: list[str] = []

    @property
    def baseline(self) -> str:
        return self.variants[0]


def trial_study_values(summary: Summary | None, variant: str, spec: StudySpec,
                       cluster_map: dict[str, str] | None = None) -> Values:
    """The study rows of one trial of ``variant``. ``cluster_map`` renames the trial's clusters (the baseline's
    ``default`` and a candidate's ``leader`` both to ``default vs leader``) so matched clusters share a row."""
    out: Values = {}
    if summary is None:
        return out
    task = find_task(summary, spec.indexing_task.get(variant), "bulk")
    if task is not None and task.throughput is not None:
        tp = task.throughput
        for what, v in (("Min", tp.min), ("Median", tp.median), ("Max", tp.max)):
            out[f"{what} Throughput (indexing)"] = (v, tp.unit)
    slowest = catch_up(summary, spec.sync_task)  # of every follower's wait (one per follower cluster)
    if slowest is not None:
        out[f"{CATCH_UP_METRIC} (CCR catch-up)"] = slowest
    out.update(follower_lags(summary))
    out.update(search_values(summary, spec.search_tasks, spec.clusters))
    out.update(_drill_values(summary))
    per_cluster: dict[tuple[str, str], list[float]] = {}
    units: dict[str, str] = {}
    for (metric, scope), (v, unit) in trial_values(summary).items():
        cluster, sep, _node = scope.partition("/")
        if not sep:
            continue
        for label, name, _u, _summed in CLUSTER_METRICS:
            if metric == name:
                cluster = (cluster_map or {}).get(cluster, cluster)
                per_cluster.setdefault((label, cluster), []).append(v)
                units[label] = unit
    for label, _name, _u, summed in CLUSTER_METRICS:
        for (lab, cluster), vs in per_cluster.items():
            if lab == label:
                out[f"{label} [{cluster}]"] = (sum(vs) if summed else sum(vs) / len(vs), units[label])
    return out


def _drill_values(summary: Summary) -> Values:
    """The drills' rows of a trial; a trial with several bootstraps or drills gets their mean (one row each)."""
    found: dict[str, list[tuple[float, str]]] = {}
    for (metric, _scope), value in trial_values(summary).items():
        for label, name in DRILL_METRICS:
            if metric == name:
                found.setdefault(label, []).append(value)
    return {label: (sum(v for v, _u in vs) / len(vs), vs[0][1]) for label, vs in found.items()}


def _direction(label: str) -> bool | None:
    """The better direction compare gives the underlying row (so both call the same change a regression)."""
    drill = dict(DRILL_METRICS).get(label)
    if drill is not None:
        return higher_is_better(drill)
    if "Throughput" in label:
        return True
    if "catch-up" in label:
        return higher_is_better(CATCH_UP_METRIC)
    if is_search_row(label):
        return False  # latency and errors
    if label.split(" [")[0] in LAG_METRICS:
        return higher_is_better(label.split(" [")[0])
    name = next((m for lab, m, _u, _s in CLUSTER_METRICS if label.startswith(lab)), label)
    return higher_is_better(name)


def _cell(ref: list[float], vals: list[float], higher: bool | None, ci_method: CiMethod) -> StudyCell:
    cell = StudyCell(value=sum(vals) / len(vals) if vals else None, values=vals)
    if not ref or not vals:
        return cell
    b = sum(ref) / len(ref)
    assert cell.value is not None
    diff = cell.value - b
    cell.diff = diff
    cell.diff_pct = 100.0 * diff / abs(b) if b else (0.0 if diff == 0 else None)
    ci = None
    if len(ref) >= MIN_GROUP and len(vals) >= MIN_GROUP:
        ci = diff_ci(ref, vals, method=ci_method)
        if b:
            cell.ci_pct = (100.0 * ci.low / abs(b), 100.0 * ci.high / abs(b))
    cell.verdict = judge(cell.diff_pct, ci, higher)
    return cell


def study_table(experiment: str, run_id: str, spec: StudySpec, sides: list[Side], *,
                ci_method: CiMethod = "auto", placement: str | None = None,
                design: str | None = None) -> StudyTable:
    """The table of one run from its sides (baseline first, labelled by variant). Pure. ``placement`` (where the
    clusters ran, ``bench.reporting.placement``) leads the table; ``design`` (what the variants differ in on
    purpose) is its first note."""
    # A matched pair of clusters shares one row, named after both.
    base_map = {base: f"{base} vs {cand}" for base, cand in spec.clusters.items()}
    cand_map = {cand: f"{base} vs {cand}" for base, cand in spec.clusters.items()}
    per_variant: list[list[Values]] = []
    for i, side in enumerate(sides):
        cmap = base_map if i == 0 else cand_map
        per_variant.append([trial_study_values(t.summary, side.label, spec, cmap) for t in side.trials])
    labels: list[str] = []
    units: dict[str, str] = {}
    for trials in per_variant:
        for vals in trials:
            for label, (_v, unit) in vals.items():
                if label not in units:
                    labels.append(label)
                    units[label] = unit
    # Key rows first, then the clusters in order of appearance.
    drills = dict(DRILL_METRICS)
    labels.sort(key=lambda lab: (0 if "Throughput" in lab else 1 if "catch-up" in lab else 2 if lab in drills
                                 else 3))
    rows: list[StudyRow] = []
    for label in labels:
        series = [[v[label][0] for v in trials if label in v] for trials in per_variant]
        ref_i = next((i for i, s in enumerate(series) if s), 0)
        higher = _direction(label)
        cells = [_cell(series[ref_i] if i != ref_i else [], s, higher, ci_method) for i, s in enumerate(series)]
        rows.append(StudyRow(label=label, unit=units[label], higher_is_better=higher, cells=cells,
                             reference=sides[ref_i].label, key="[" not in label))
    notes = [design] if design else []
    if spec.note:
        notes.append(spec.note)
    if spec.clusters:
        notes.append("Cluster rows: the baseline's " + ", ".join(f"{b} is compared with the variants' {c}"
                                                                  for b, c in spec.clusters.items())
                     + "; a cluster the baseline lacks (the follower) is compared with the first variant having it.")
    lead = [placement] if placement else []
    small = {s.label: len(s.trials) for s in sides if len(s.trials) < MIN_GROUP}
    if small:
        counts = sorted(set(small.values()))
        n = f"n = {counts[0]}" if len(counts) == 1 else "n = " + ", ".join(f"{k}: {v}" for k, v in small.items())
        every = len(small) == len(sides)
        lead.append(f"{n} {'per variant' if every else 'for ' + ', '.join(small)}: fewer than {MIN_GROUP} trials, so "
                    f"{'nothing is' if every else 'these are not'} judged (\"not judged\"); run ≥ {MIN_GROUP} "
                    "repetitions for a confidence verdict.")
    table = StudyTable(experiment=experiment, run_id=run_id, variants=[s.label for s in sides],
                       trials=[len(s.trials) for s in sides], rows=rows, lead=lead, notes=notes)
    line = resolution_line(main_row_resolution(table, effect_pct=spec.effect))
    table.after = [line] if line else []
    return table


def main_row(table: StudyTable) -> StudyRow | None:
    """The row the study is about: the median indexing throughput, else the first key row."""
    return next((r for r in table.rows if r.label == MAIN_ROW), None) or next((r for r in table.rows if r.key), None)


def main_row_resolution(table: StudyTable, *, effect_pct: float = DEFAULT_EFFECT_PCT) -> list[Resolution]:
    """What the study could resolve on its main row, for each variant against the row's reference."""
    row = main_row(table)
    if row is None:
        return []
    ref_i = table.variants.index(row.reference) if row.reference in table.variants else 0
    return resolutions(row.label, row.cells[ref_i].values,
                       [(v, c.values) for i, (v, c) in enumerate(zip(table.variants, row.cells)) if i != ref_i],
                       effect_pct=effect_pct)


def load_study_table(store: TrialReader, exp: ExperimentFile, run_id: str, track_index: int = 0, *,
                     ci_method: CiMethod = "auto") -> StudyTable:
    """The study table of a stored run of ``exp`` (its complete trials, by their experiment tags)."""
    from bench.compare.select import resolve_side, resolve_sides
    from bench.race.experiment import comparison_selectors

    assert exp.study is not None and exp.baseline is not None
    from bench.reporting.design import design_line

    baseline, candidates = comparison_selectors(exp, run_id, track_index)
    labels = [exp.baseline, *[v for v in exp.variants if v != exp.baseline]]
    if candidates:
        base, cands, notes = resolve_sides(store, baseline, candidates, labels)
    else:  # one variant: its table (and nightly history) without a comparison
        (base, notes), cands = resolve_side(store, baseline, labels[0]), []
    table = study_table(exp.name, run_id, exp.study, [base, *cands], ci_method=ci_method,
                        placement=placement_line(placed_trials(store, exp.study, [base, *cands])),
                        design=design_line(exp))
    table.notes += [n for n in notes if n.startswith(REPEATED_RACE)]  # its n is one per repetition: say why
    return table


def placed_trials(store: TrialReader, spec: StudySpec, sides: list[Side]) -> list[PlacedTrial]:
    """Each trial of the sides with its load during its variant's indexing task (host telemetry)."""
    out = []
    for side in sides:
        for t in side.trials:
            load = None
            task = find_task(t.summary, spec.indexing_task.get(side.label), "bulk") if t.summary is not None else None
            window = task_window(store.samples(t.info.id), task.task) if task is not None else None
            if window is not None:
                cpus = t.info.machine.get("cpu_count")
                load = window_load(store.telemetry(t.info.id), *window, cpus if isinstance(cpus, int) else None)
            out.append(PlacedTrial(variant=side.label, info=t.info, load=load))
    return out


def _num(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.2f}"


def delta_text(cell: StudyCell, unit: str = "") -> str:
    if cell.diff_pct is None:
        if cell.diff is None:
            return "–"
        return f"{cell.diff:+,.2f} {unit} (from 0)".replace("  ", " ")
    text = f"{cell.diff_pct:+.1f} % {cell.verdict}"
    if cell.ci_pct is not None:
        text += f" (95 % CI {cell.ci_pct[0]:+.1f} … {cell.ci_pct[1]:+.1f} %)"
    return text


class TableView(BaseModel):
    """A titled table of strings with notes: what the report templates show of a study or a history."""

    title: str
    lead: list[str] = []  # lines before the table (a study's placement and trial counts)
    after: list[str] = []  # lines right under it (a study's resolution)
    headers: list[str]
    rows: list[list[str]]
    notes: list[str] = []
    # One CSS class per cell ("num", and a verdict's "improvement" / "regression" / "noise"); empty: none given.
    classes: list[list[str]] = []


def study_view(table: StudyTable) -> TableView:
    headers = ["Metric", "Unit", f"Baseline: {table.baseline} (n={table.trials[0]})"]
    for v, n in zip(table.variants[1:], table.trials[1:]):
        headers += [f"{v} (n={n})", "Δ %"]
    rows, classes = [], []
    colour = {"improvement": "improvement", "regression": "regression", "within noise": "noise",
              "no change": "noise"}
    for r in table.rows:
        label = r.label if r.reference == table.baseline else f"{r.label} (Δ against {r.reference})"
        cells, cls = [label, r.unit, _num(r.cells[0].value)], ["", "", "num"]
        for c in r.cells[1:]:
            cells += [_num(c.value), delta_text(c, r.unit)]
            cls += ["num", f"num {colour.get(c.verdict, '')}".strip()]
        rows.append(cells)
        classes.append(cls)
    return TableView(title=f"Study: {table.experiment}, run {table.run_id}", lead=table.lead, headers=headers,
                     rows=rows, notes=table.notes, classes=classes, after=table.after)


def markdown_table(view: TableView) -> str:
    """GitHub-flavoured markdown of a table view (a gist renders it as it is)."""
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [f"## {view.title}", ""]
    for lead in view.lead:  # paragraphs of their own
        out += [lead, ""]
    out += [line(view.headers), "|" + "---|" * len(view.headers)]
    out += [line(r) for r in view.rows]
    out.append("")
    for after in view.after:
        out += [after, ""]
    out += [f"- {n}" for n in view.notes]
    return "\n".join(out) + "\n"


def render_study_markdown(table: StudyTable) -> str:
    return markdown_table(study_view(table))
