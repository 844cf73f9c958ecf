"""The layout shows the layers: no import circle among gompute's own modules or the benchmark
scripts, the kernel language imports nothing above it, and no source file grows past 600 lines.

Imports are read with `ast`, not by importing, so every import counts: at module level, inside
functions, and `from . import x`. A circle that a function-level import hides at load time still
ties two layers together, and the next module-level import would make it a failure at import.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "gompute"
BENCHMARKS = REPO / "benchmarks"
MAX_LINES = 600
SOURCE_SUFFIXES = {".py", ".h", ".cpp", ".pyi"}

# What the kernel language (gompute.lang) must not reach: the layers that use it (the package's
# __init__ imports them all). It may use the scalar types, Params, the errors and the compilers.
ABOVE_LANG = (
    "gompute.__main__",
    "gompute.aot",
    "gompute.demo",
    "gompute.interop",
    "gompute.kernel",
    "gompute.raw",
    "gompute.runtime",
)


def _modules(package: Path = PACKAGE, scripts: Path = BENCHMARKS) -> dict[str, Path]:
    """Every module of `package` (dotted names; a compiled module such as `_core` by its .pyi stub)
    and every script in `scripts` (imported by its stem, as the scripts put their folder on
    sys.path)."""
    modules = {}
    for path in sorted([*package.rglob("*.py"), *package.rglob("*.pyi")]):
        parts = path.relative_to(package.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    for path in sorted(scripts.glob("*.py")):
        modules[path.stem] = path
    return modules


def _package_of(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _imports(name: str, path: Path, known: dict[str, Path]) -> list[tuple[str, int]]:
    """(imported own module, line) for each import in the file at `path`."""
    if path.suffix == ".pyi":
        return []  # a compiled module's stub: what it imports is for type checkers only
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package_of(name, path).split(".")
                anchor = ".".join(package[: len(package) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                submodule = f"{base}.{alias.name}"  # `from . import x`: x may be a module
                found.append((submodule if submodule in known else base, node.lineno))
    return [(target, line) for target, line in found if target in known and target != name]


def _graph(package: Path = PACKAGE, scripts: Path = BENCHMARKS) -> tuple[dict[str, Path], dict[str, dict[str, int]]]:
    """The modules, and for each the own modules it imports with the line of its first import."""
    modules = _modules(package, scripts)
    edges: dict[str, dict[str, int]] = {}
    for name, path in modules.items():
        edges[name] = {}
        for target, line in _imports(name, path, modules):
            edges[name][target] = min(line, edges[name].get(target, line))
    return modules, edges


def _groups(edges: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan): each module of a group
    reaches every other through imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return groups


def _circle_in(group: list[str], edges: dict[str, dict[str, int]]) -> list[str]:
    """A shortest circle from the group's first module back to it, within the group."""
    start, members = group[0], set(group)
    came_from = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in edges[v]:
                if w == start:
                    path = [v]
                    while came_from[path[-1]] is not None:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if w in members and w not in came_from:
                    came_from[w] = v
                    following.append(w)
        frontier = following
    raise AssertionError(f"{group} is strongly connected, so a circle must exist")


def _describe(group: list[str], modules: dict[str, Path], edges: dict[str, dict[str, int]]) -> str:
    circle = _circle_in(group, edges)
    steps = [f"{modules[a].relative_to(REPO)}:{edges[a][b]} imports {b}" for a, b in zip(circle, circle[1:])]
    return f"{', '.join(group)} import each other; one circle:\n    " + "\n    ".join(steps)


def test_no_import_circle():
    modules, edges = _graph()
    groups = _groups(edges)
    assert not groups, "import circles (break each by moving what both sides need below them):\n" + "\n".join(
        _describe(g, modules, edges) for g in groups
    )


def test_the_kernel_language_imports_nothing_above_it():
    """Not directly, nor through a module it imports."""
    modules, edges = _graph()
    came_from = {name: None for name in edges if _within(name, ("gompute.lang",))}
    frontier = list(came_from)
    while frontier:
        following = []
        for v in frontier:
            for w in edges[v]:
                if w not in came_from:
                    came_from[w] = v
                    following.append(w)
        frontier = following
    wrong = []
    for target in sorted(t for t in came_from if t == "gompute" or _within(t, ABOVE_LANG)):
        path = [target]
        while came_from[path[-1]] is not None:
            path.append(came_from[path[-1]])
        steps = [f"{modules[a].relative_to(REPO)}:{edges[a][b]} imports {b}" for b, a in zip(path, path[1:])]
        wrong.append("\n    ".join(reversed(steps)))
    assert not wrong, "gompute.lang reaches up into a layer that uses it:\n    " + "\n\n    ".join(wrong)


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(f"{p}.") for p in packages)


def test_the_graph_sees_every_kind_of_import(tmp_path):
    """The walker itself: each kind of import makes an edge, else a circle through it would pass
    unseen; a name imported from a package that is not a module is an edge to the package."""
    package, scripts = tmp_path / "pkg", tmp_path / "scripts"
    (package / "sub").mkdir(parents=True)
    scripts.mkdir()
    files = {
        package / "__init__.py": "from .a import f\n",
        package / "a.py": "import os\nfrom . import b\n\n\ndef f():\n    from .sub import c\n    import pkg.sub\n",
        package / "b.py": "from pkg import f\nfrom pkg.sub.c import g as _\n",
        package / "sub" / "__init__.py": "",
        package / "sub" / "c.py": "from .. import a, _ext\nfrom ..b import nothing\n",
        package / "_ext.pyi": "import pkg.a\n",
        scripts / "run.py": "import helper\nimport pkg.a\n",
        scripts / "helper.py": "from run import x\n",
    }
    for path, text in files.items():
        path.write_text(text)
    _, edges = _graph(package, scripts)
    assert edges == {
        "pkg": {"pkg.a": 1},
        "pkg.a": {"pkg.b": 2, "pkg.sub.c": 6, "pkg.sub": 7},
        "pkg.b": {"pkg": 1, "pkg.sub.c": 2},
        "pkg.sub": {},
        "pkg.sub.c": {"pkg.a": 1, "pkg._ext": 1, "pkg.b": 2},
        "pkg._ext": {},
        "run": {"helper": 1, "pkg.a": 2},
        "helper": {"run": 1},
    }
    assert sorted(_groups(edges)) == [["helper", "run"], ["pkg", "pkg.a", "pkg.b", "pkg.sub.c"]]


def _source_files() -> list[Path]:
    roots = (PACKAGE, REPO / "csrc")
    return sorted(p for root in roots for p in root.rglob("*") if p.is_file() and p.suffix in SOURCE_SUFFIXES)


def test_no_source_file_over_600_lines():
    long = {p: len(p.read_text().splitlines()) for p in _source_files()}
    over = [f"{p.relative_to(REPO)}: {n} lines" for p, n in long.items() if n > MAX_LINES]
    why = f"source files over {MAX_LINES} lines (split each where its parts are separate ideas):"
    assert not over, "\n".join([why, *over])
