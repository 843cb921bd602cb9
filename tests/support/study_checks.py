"""What a CCR study's markdown report must read like, checked by the live study tests (tests/ccr/): the study
first, opening with its placement line; the variants' planned differences as its design note, not warnings."""

from __future__ import annotations

from bench.reporting.study import StudyTable


def assert_study_reads_first(text: str, table: StudyTable) -> None:
    """The study comes first and opens with the placement line; what the variants differ in by design is its
    design note, not a warning; repeated warnings are one line."""
    body = text.split("## Study: ", 1)[1]
    assert text.index("## Study: ") < text.index("## Comparison") and "## Headline" not in text[:text.index("## Study")]
    assert body.split("\n")[2] == table.lead[0] and table.lead[0].startswith("Placement: ")
    assert "load driver shared one host" in table.lead[0] and "While each variant indexed" in table.lead[0]
    assert table.lead[1].startswith("n = 1 per variant")
    assert table.notes[0].startswith("Design: the variants differ in challenge")
    for unplanned in ("Trials differ in cars", "Trials of different tracks or challenges", "Cluster roles:"):
        assert unplanned not in text
    assert text.count("per side are needed") <= 1
