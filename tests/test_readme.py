"""The README and the user guide's pages run as written: every ```python block of the pages in
``PAGES`` is executed here, page by page in order, with ``pm.sample`` shortened (100 + 100
iterations, 2 chains, one process) so that each page takes seconds.  A block whose first line
is ``# tested by <file>::<test>`` (a cluster) is run by that test instead, which must exist.
The notebooks of the guide are executed by the docs build (``tests/test_notebooks.py``).  A
block that stops matching the package fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", ROOT / "docs" / "index.md", ROOT / "docs" / "getting-started.md",
         ROOT / "docs" / "causal.md", ROOT / "docs" / "interpret.md", ROOT / "docs" / "boosting.md",
         ROOT / "docs" / "compare.md", ROOT / "docs" / "new-data.md"]


def _blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(), re.M | re.S)


def test_the_readme_is_a_landing_page():
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("```python"))
    assert len(text.encode()) <= 7000 and len(lines) <= 120 and first < 40
    assert "pip install" in text and "make test" in text


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_code_block_of_the_first_pages_runs(page, monkeypatch, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot
    import pymc as pm

    real = pm.sample

    def short(*args, **kwargs):
        kwargs.update(draws=100, tune=100, chains=2, cores=1, progressbar=False,
                      random_seed=kwargs.get("random_seed", 1))
        return real(*args, **kwargs)

    monkeypatch.setattr(pm, "sample", short)
    monkeypatch.chdir(tmp_path)  # files a block writes (an HTML report) stay out of the tree
    blocks = _blocks(page)
    assert blocks, f"{page} has no python block"
    namespace = {"__name__": "__readme__"}
    for i, block in enumerate(blocks):  # in order, in one namespace, as a reader runs them
        elsewhere = re.match(r"# tested by (\S+)::(\w+)\n", block)
        if elsewhere:  # a block that needs more than a test of seconds (a cluster) runs there
            assert f"def {elsewhere[2]}(" in (ROOT / elsewhere[1]).read_text(), elsewhere[0]
            continue
        exec(compile(block, f"{page.name}, block {i}", "exec"), namespace)
    matplotlib.pyplot.close("all")
