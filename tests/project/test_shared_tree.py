"""The shared folder beside the checkout is found relative to it (tests/support/shared_tree.py), never at a machine path,
and CI without it fails instead of skipping what needs it."""

from __future__ import annotations

import os
import re

import pytest

from tests.support.checkout import ROOT
from tests.support.shared_tree import need_shared, shared_root

# An absolute path into this machine's folders: a shared tree, a mirror, a fixture.
MACHINE_PATH = re.compile(r"""["'`(\s]/(?:work|home|root|tmp)/(?:shared|[\w.-]*mirror|\.bench)""")


def test_no_code_names_a_machine_path_to_a_shared_tree_or_fixture() -> None:
    found = []
    for folder in ("bench", "tests", "benchmarks"):
        for path in (ROOT / folder).rglob("*.py"):
            for no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if MACHINE_PATH.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize("part", ["tracks-real/rally-tracks", "tracks-real/osb-workloads", "fixtures",
                                  "opensearch-replication-plugin"])
def test_ci_has_every_part_of_the_shared_folder(part: str) -> None:
    if not os.environ.get("CI"):
        pytest.skip(f"outside CI a clone may lack {shared_root()}")
    assert need_shared(*part.split("/")).exists()
