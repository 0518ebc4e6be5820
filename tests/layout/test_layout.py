"""The layout's invariants, checked (ARCHITECTURE.md, "Invariants"; issue 13):

- import-linter's contracts in pyproject.toml: imports run down the stages (calculus ->
  typing_rules -> interpreter -> compiler -> fuzz -> cli), no language reads another
  below fuzz/, interpreters never import compilers, targets are independent;
- no import cycle between any two modules (a strongly connected component of the
  module graph, function-level imports included);
- no underscore name imported from another module;
- every module under 800 lines (STYLE 22);
- mypy: strict for calculus/, typing_rules/, interpreter/, the default elsewhere.

import-linter and mypy read `src/gpusem/` itself: the checkout has the package's shape
(the PyPA src layout), so no copy of an installed tree is needed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.layout import early

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
MAX_LINES = 800


def _tool(name: str, args: list[str]) -> subprocess.CompletedProcess:
    return early.run(name, args)  # mypy was started when collection ended


def test_the_checkout_has_the_package_shape():
    """No folder mapping at install time: `src/gpusem/` is the package."""
    assert not (ROOT / "setup.py").exists()
    assert (SRC / "gpusem" / "__init__.py").is_file()
    stray = [p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()
             and p.name not in ("tests", "scripts")]
    assert stray == []


def test_import_contracts_are_kept():
    out = _tool("lint-imports", ["--config", str(ROOT / "pyproject.toml")])
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    assert "0 broken" in out.stdout


def test_mypy_is_clean():
    out = _tool("mypy", early.MYPY_ARGS)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]


def _modules() -> dict[str, tuple[Path, bool]]:
    mods: dict[str, tuple[Path, bool]] = {}
    for path in (SRC / "gpusem").rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        mods[name] = (path, is_package)
    return mods


def _imports(name: str, path: Path, is_package: bool, known) -> list[tuple[str, str]]:
    """(module imported, name imported from it or "") for every gpusem import."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.startswith("gpusem.")]
        elif isinstance(node, ast.ImportFrom):
            base = name.split(".") if is_package else name.split(".")[:-1]
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if not module.startswith("gpusem"):
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.append((sub, "") if sub in known else (module, alias.name))
    return found


def test_no_import_cycles_between_modules():
    mods = _modules()
    graph = {m: {dep for dep, _ in _imports(m, p, pkg, mods) if dep in mods and dep != m}
             for m, (p, pkg) in mods.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in graph:
        if v not in index:
            visit(v)
    assert len(graph) > 150  # the walk saw the package
    assert cycles == []


def test_no_underscore_names_imported_across_modules():
    mods = _modules()
    bad = [f"{m} imports {name} from {dep}"
           for m, (p, pkg) in mods.items()
           for dep, name in _imports(m, p, pkg, mods)
           if name.startswith("_") and not name.startswith("__")]
    assert bad == []


def _module_aliases(name: str, path: Path, is_package: bool, known) -> set[str]:
    """Local names bound to a gpusem module: `from gpusem.x import y [as M]` where
    gpusem.x.y is a module, and `import gpusem.x.y as M`."""
    tree = ast.parse(path.read_text())
    local: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            local |= {a.asname for a in node.names if a.asname and a.name in known}
        elif isinstance(node, ast.ImportFrom):
            base = name.split(".") if is_package else name.split(".")[:-1]
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            local |= {a.asname or a.name for a in node.names
                      if f"{module}.{a.name}" in known}
    return local


def test_no_underscore_attributes_of_imported_modules():
    """`from gpusem.x import y as M` then `M._name`: the same breach by another road."""
    mods = _modules()
    bad = []
    for m, (path, pkg) in mods.items():
        local = _module_aliases(m, path, pkg, mods)
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in local and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                bad.append(f"{m}: {node.value.id}.{node.attr}")
    assert bad == []


def test_modules_are_short():
    long = {str(p.relative_to(ROOT)): n for p, _ in _modules().values()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}
