"""The README stays a front door and the manual (docs/, mkdocs.yml) stays whole: checked without building the
site, in well under a second of work, with no cluster. ``nox -s docs`` builds it with --strict for the rest
(links between pages, anchors, the generated references)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
COMMANDS = ("pip install . && bench race --track=nginx --test-mode", "pip install nox && nox -s tests")
MAX_README_LINES = 200


def _reference() -> ModuleType:
    """docs/_gen/reference.py, the generators the docs build runs (not a package: loaded from its path)."""
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "docs" / "_gen" / "reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _nav_pages(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return []


def test_readme_is_short_and_starts_with_the_two_commands() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= MAX_README_LINES, "the README is the front door: move details into docs/"
    first_block = re.search(r"^```[a-z]*\n(.*?)^```", text, re.S | re.M)
    assert first_block, "the README starts with a code block holding the two commands"
    assert text.index(first_block.group(0)) < text.find("\n## "), "the commands come before the first section"
    commands = [line for line in first_block.group(1).splitlines() if line.strip() and not line.startswith("#")]
    assert commands == list(COMMANDS)


def test_every_page_in_the_nav_exists() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    docs = ROOT / config.get("docs_dir", "docs")
    generated = _reference().GENERATED
    pages = _nav_pages(config["nav"])
    assert len(pages) > 20
    missing = [p for p in pages if p not in generated and not (docs / p).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages that do not exist: {missing}"


def test_every_relative_link_in_the_readme_points_at_a_file() -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text())
    relative = [link.split("#")[0] for link in links if not re.match(r"[a-z]+:|#", link)]
    assert relative, "the README links into docs/"
    broken = [link for link in relative if not (ROOT / link).exists()]
    assert not broken, f"README links to files that do not exist: {broken}"


def test_the_generated_references_cover_every_command_and_module() -> None:
    reference = _reference()
    cli = reference.cli_reference()
    for command in ("race", "loadgen", "info", "list", "show", "stop", "cloud", "cloud up", "compare", "report",
                    "experiment", "store push"):
        assert f"### `bench {command}`" in cli or f"#### `bench {command}`" in cli, command
    assert "`--redline`" in cli and "`--runtime-jdk N|bundled`" in cli
    modules = dict(reference.api_modules())
    assert len(modules) == len([p for p in (ROOT / "bench").rglob("*.py") if p.name != "__main__.py"])
    assert modules["bench.race.race"] == "reference/api/bench/race/race.md"
    assert modules["bench.driver"] == "reference/api/bench/driver/index.md"


def test_every_link_into_the_api_reference_names_a_generated_page() -> None:
    # Generated pages move with their modules; the docs build does not flag a link into them that no longer exists.
    pages = set(dict(_reference().api_modules()).values())
    broken = []
    for page in (ROOT / "docs").rglob("*.md"):
        for link in re.findall(r"\]\(([^)\s#]*reference/api/[^)\s#]+\.md)", page.read_text()):
            target = (page.parent / link).resolve().relative_to((ROOT / "docs").resolve()).as_posix()
            if target not in pages:
                broken.append(f"{page.relative_to(ROOT)}: {link}")
    assert broken == []
