"""The README and docs/*.md: every ```python block runs as written, on its own, and the
reference documents every builtin and links to files that exist."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gompute.lang.builtins import BUILTINS

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINKING = [*PAGES, REPO / "benchmarks" / "results" / "README.md"]  # pages whose links are checked
# Frameworks a block may import; a block that imports one that is missing is skipped, not failed.
OPTIONAL = ("torch", "jax", "cupy")


def python_blocks() -> list[pytest.param]:
    """Each ```python block, with the page and line it starts on as its id."""
    blocks = []
    for page in PAGES:
        text = page.read_text()
        for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
            line = text.count("\n", 0, match.start()) + 2
            blocks.append(pytest.param(match.group(1), id=f"{page.relative_to(REPO)}:{line}"))
    return blocks


def imported_modules(code: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("code", python_blocks())
def test_the_example_runs_on_its_own(code, tmp_path, tmp_path_factory):
    for name in sorted(imported_modules(code) & set(OPTIONAL)):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"the example imports {name}, which is not installed")
    # Kernels are read from their file with inspect, so the block runs as a script of its own,
    # in a fresh process (nothing from another block can leak in).
    script = tmp_path / "example.py"
    script.write_text(code)
    env = dict(os.environ)
    env.setdefault("GOMPUTE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "kernel-cache"))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr


def test_every_page_with_examples_has_them_found():
    """A fence the pattern above misses (indented, or ```py) would leave an example untested."""
    for page in PAGES:
        text = page.read_text()
        fences = re.findall(r"^\s*```(\w*)", text, flags=re.M)
        openings = fences[::2]
        assert len(fences) % 2 == 0, f"{page.name} has an unclosed ``` fence"
        assert not {"py", "python3", "pycon"} & set(openings), f"{page.name}: use ```python for Python examples"
        assert not re.search(r"^[ \t]+```python", text, flags=re.M), f"{page.name}: an indented ```python block"


def test_every_builtin_is_documented_in_the_kernel_reference():
    text = (REPO / "docs" / "kernels.md").read_text()
    table = text.split("| builtin | result | meaning |")[1].split("\n\n")[0]
    missing = [name for name in [*BUILTINS, "pow"] if not re.search(rf"`{name}[(`]", table)]
    assert not missing, f"docs/kernels.md's builtins table lacks {missing}"


def anchors(page: Path) -> set[str]:
    """The anchors GitHub makes of a page's headings: lower case, punctuation dropped, blanks as -."""
    headings = re.findall(r"^#+ (.*)$", page.read_text(), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_relative_links_point_at_files_and_headings_that_exist():
    broken = []
    for page in LINKING:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", page.read_text()):
            if "://" in target:
                continue
            path = page.parent / target if target else page
            if not path.exists() or (anchor and path.suffix == ".md" and anchor not in anchors(path)):
                broken.append(f"{page.relative_to(REPO)} -> {target}#{anchor}")
    assert not broken, broken


def test_the_readme_is_short():
    lines = (REPO / "README.md").read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; reference material belongs in docs/"
