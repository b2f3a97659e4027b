"""The docs the code cites exist: every ``docs/<page>.md`` named in the package, the tests and
the benchmarks is a page of the site, and every ``docs/math.md`` section they cite is a
section of that page.  The site's shape: no page over 40 kB, no run file or figure at the top
of ``docs/``, no issue numbers in the README or the docs, and a reference page for every
public name."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
SOURCES = [p for d in ("pymc_trees", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py")]


def test_every_docs_page_the_code_cites_exists():
    missing = set()
    for path in SOURCES:
        for page in re.findall(r"docs/([\w/.-]+?\.md)", path.read_text()):
            if not (DOCS / page).is_file():
                missing.add(f"{path.relative_to(ROOT)}: docs/{page}")
    assert not missing, sorted(missing)


def test_every_math_section_the_code_cites_exists():
    sections = set(re.findall(r"^## (\d+)\. ", (DOCS / "math.md").read_text(), re.M))
    cited = set()
    for path in SOURCES:
        text = re.sub(r"\s+", " ", path.read_text())
        for group in re.findall(r"docs/math\.md,? sections? ([\d ,and-]+)", text):
            cited.update(re.findall(r"\d+", group))
    assert cited and cited <= sections, sorted(cited - sections)


def test_the_site_is_written_for_users():
    pages = list(DOCS.rglob("*.md"))
    assert all(p.stat().st_size <= 40_000 for p in pages), [
        str(p) for p in pages if p.stat().st_size > 40_000]
    top = [p.name for p in DOCS.iterdir() if p.suffix in (".json", ".png", ".txt", ".csv")]
    assert not top, top
    numbered = [f"{p}:{m}" for p in pages + [ROOT / "README.md"]
                for m in re.findall(r"(?i)issue [0-9]+", p.read_text())]
    assert not numbered, numbered


def test_the_reference_lists_every_public_name():
    import importlib

    api = (DOCS / "api.md").read_text()
    missing = []
    for module in ("pymc_trees", "pymc_trees.interpret", "pymc_trees.boosting",
                   "pymc_trees.comparison"):
        for name in importlib.import_module(module).__all__:
            if not re.search(rf"(^   {name}$|`{name}`)", api, re.M):
                missing.append(f"{module}.{name}")
    assert not missing, f"docs/api.md does not list {missing}"
