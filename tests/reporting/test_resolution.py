"""The study's resolution line (bench/reporting/resolution.py), pure: from the spread of its main row within each
variant, the smallest difference it could have detected and the repetitions an effect needs; and where it shows."""

from __future__ import annotations

from bench.compare.main_row import MAIN_ROW
from bench.reporting.resolution import resolution_line
from bench.reporting.study import StudyCell, StudyRow, StudyTable, render_study_markdown, study_view
from bench.reporting.study import main_row_resolution as study_resolution


def _table(*variants: tuple[str, list[float]]) -> StudyTable:
    row = StudyRow(label=MAIN_ROW, unit="docs/s", higher_is_better=True, reference=variants[0][0],
                   cells=[StudyCell(values=v, value=sum(v) / len(v)) for _name, v in variants])
    other = StudyRow(label="Max Throughput (indexing)", unit="docs/s", higher_is_better=True,
                     reference=variants[0][0], cells=[StudyCell(values=[1.0, 99.0]) for _ in variants])
    return StudyTable(experiment="e", run_id="r", variants=[n for n, _v in variants],
                      trials=[len(v) for _n, v in variants], rows=[other, row])


def test_two_repetitions_state_what_they_could_resolve():
    # The main row is the median, not the first row. Values as in tests/compare/test_power.py: the difference
    # detectable is 7584.9 of the baseline's mean 10,000 (±75.8 %); 3 % (300) needs 350 per variant.
    table = _table(("baseline", [9000.0, 11000.0]), ("ccr", [7000.0, 9000.0]))
    [res] = study_resolution(table)
    assert res.variant == "ccr" and round(res.mdd_pct, 1) == 75.8 and res.needed == 350
    line = resolution_line([res])
    assert line == ("Resolution (Median Throughput (indexing); 95 % confidence, 80 % power): with 2 repetitions per "
                    "variant the study could detect differences of ±75.8 %; 3 % would need about 350 repetitions per "
                    "variant.")
    # an effect of 10 % (1,000): (t(.975, 2n−2) + t(.80, 2n−2)) · √(4e6/n) ≤ 1000 first at n = 33
    [ten] = study_resolution(table, effect_pct=10)
    assert ten.needed == 33


def test_each_candidate_has_its_own_and_one_repetition_knows_nothing():
    table = _table(("baseline", [9000.0, 11000.0]), ("ccr", [7000.0, 9000.0]), ("quiet", [10000.0, 10010.0]))
    line = resolution_line(study_resolution(table))
    # quiet: variances 2e6 and 50: SE = √(1e6 + 25) = 1000.01, Welch df = (1e6 + 25)² / (1e12 + 625) = 1.00005, so
    # t(.975, 1) + t(.80, 1) = 12.7062 + 1.3764 = 14.0826: 14,083, ±140.8 % -- a quiet candidate beside a noisy
    # baseline leaves Welch one degree of freedom at n = 2, and is no better resolved for it.
    assert line is not None and "±75.8 % (ccr), ±140.8 % (quiet)" in line
    assert "3 % would need ccr: about 350; quiet: about 177 repetitions per variant." in line
    lone = resolution_line(study_resolution(_table(("baseline", [9000.0]), ("ccr", [7000.0]))))
    assert lone is not None and "not known: with 1 repetition per variant the spread within a variant is unknown" \
        in lone


def test_the_line_is_under_the_table_in_markdown_and_the_html_view():
    table = _table(("baseline", [9000.0, 11000.0]), ("ccr", [7000.0, 9000.0]))
    table.after = [resolution_line(study_resolution(table)) or ""]
    md = render_study_markdown(table)
    rows_end = md.index("| Median Throughput (indexing) |")
    assert md.index("Resolution (Median") > rows_end
    assert "\n\nResolution (Median Throughput (indexing); 95 % confidence" in md
    assert study_view(table).after == table.after
