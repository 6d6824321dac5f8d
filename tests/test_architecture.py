"""The layout docs/architecture.md describes is the layout the imports have.

Every module of ``pandas_dp`` is read with :mod:`ast` (nothing is imported), each
import is mapped from the importing module's top-level part (``releases``,
``noise``, ``errors``...) to the imported one's, and the edges are checked against
the "may import" table of docs/architecture.md, parsed from the page itself so the
page and this test cannot drift:

(a) every import between parts is allowed by the table (imports under
    ``if TYPE_CHECKING:`` are exempt: they never run);
(b) neither the table nor the imports have a cycle between parts;
(c) at most 10 function-local imports of package modules, each with a comment
    on its line saying why it is local;
(d) no part imports another part's private names or private modules;
(e) the package root holds at most 8 modules.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "pandas_dp"
DOC = ROOT / "docs" / "architecture.md"
MAX_LOCAL_IMPORTS = 10
MAX_ROOT_MODULES = 8


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def part_of(module: str) -> str:
    """The top-level part of a module: its folder under pandas_dp, or the root module's own name."""
    bits = module.split(".")
    return "__init__" if len(bits) == 1 else bits[1]


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    line: int
    end_line: int
    target: str  # the imported module (a submodule when ``from package import submodule``)
    name: str | None  # the imported object, None for ``import x`` and for submodules
    local: bool  # inside a function
    type_checking: bool  # under ``if TYPE_CHECKING:``


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk(node: ast.AST, local: bool = False, guarded: bool = False):
    """Every node under ``node``, with whether it is in a function's body and under ``if TYPE_CHECKING:``."""
    yield node, local, guarded
    function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    checking = isinstance(node, ast.If) and _is_type_checking(node.test)
    for field, value in ast.iter_fields(node):
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield from _walk(child, local or (function and field == "body"),
                                 guarded or (checking and field == "body"))


def _imports_of(module: str, path: Path) -> list[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node, local, guarded in _walk(tree):
        pairs: list[tuple[str, str | None]]
        if isinstance(node, ast.Import):
            pairs = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            pairs = [(base, alias.name) for alias in node.names]
        else:
            continue
        for target, name in pairs:
            if not (target == "pandas_dp" or target.startswith("pandas_dp.")):
                continue
            if name is not None and f"{target}.{name}" in MODULES:  # ``from package import submodule``
                target, name = f"{target}.{name}", None
            found.append(Import(module, node.lineno, node.end_lineno or node.lineno, target, name, local, guarded))
    return found


IMPORTS = [imp for module, path in MODULES.items() for imp in _imports_of(module, path)]


def read_may_import(text: str) -> dict[str, set[str]]:
    """The table whose header is ``| part | ... | may import |``: part -> the parts it may import."""
    table: dict[str, set[str]] = {}
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            if table:
                break
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            if cells and cells[0].lower() == "part" and cells[-1].lower() == "may import":
                header = cells
            continue
        if set(cells[0]) <= set("-: "):  # the separator row
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        assert len(names) == 1, f"one part per row of the 'may import' table; got {cells[0]!r}"
        part = names[0].removesuffix("/").removesuffix(".py")
        table[part] = {n.removesuffix("/").removesuffix(".py") for n in re.findall(r"`([^`]+)`", cells[-1])}
    return table


MAY_IMPORT = read_may_import(DOC.read_text(encoding="utf-8"))


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (a list of nodes, first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_table_names_every_part_and_nothing_else():
    parts = {part_of(m) for m in MODULES}
    assert set(MAY_IMPORT) == parts
    unknown = {p: sorted(allowed - parts) for p, allowed in MAY_IMPORT.items() if allowed - parts}
    assert not unknown, f"the 'may import' table names parts that do not exist: {unknown}"


def test_every_import_between_parts_is_in_the_table():
    """(a) An import from part A of part B (B != A) needs B in A's "may import" cell of docs/architecture.md."""
    bad = sorted(f"{imp.module}:{imp.line} imports {imp.target}"
                 for imp in IMPORTS if not imp.type_checking
                 and part_of(imp.target) != part_of(imp.module)
                 and part_of(imp.target) not in MAY_IMPORT[part_of(imp.module)])
    assert not bad, "imports the 'may import' table does not allow:\n" + "\n".join(bad)


def test_no_cycle_between_parts():
    """(b) The table is acyclic, and so are the imports themselves (function-local ones included)."""
    assert cycle_in(MAY_IMPORT) is None, f"the 'may import' table has a cycle: {cycle_in(MAY_IMPORT)}"
    edges: dict[str, set[str]] = {}
    for imp in IMPORTS:
        a, b = part_of(imp.module), part_of(imp.target)
        if a != b and not imp.type_checking:
            edges.setdefault(a, set()).add(b)
    assert cycle_in(edges) is None, f"parts import each other in a cycle: {cycle_in(edges)}"


def test_few_function_local_imports_each_saying_why():
    """(c) A function-local import of a package module is the exception (lazy optional dependency, a cycle
    inside a part), and its line says which."""
    local = [imp for imp in IMPORTS if imp.local]
    statements = {(imp.module, imp.line, imp.end_line) for imp in local}
    listing = "\n".join(f"{m}:{line}" for m, line, _ in sorted(statements))
    assert len(statements) <= MAX_LOCAL_IMPORTS, f"{len(statements)} function-local package imports:\n{listing}"
    silent = []
    for module, line, end in sorted(statements):
        lines = MODULES[module].read_text(encoding="utf-8").splitlines()[line - 1:end]
        if not any("#" in text for text in lines):
            silent.append(f"{module}:{line}")
    assert not silent, "function-local imports without a comment saying why: " + ", ".join(silent)


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_private_names_imported_across_parts():
    """(d) Another part's ``_name`` objects and ``_module`` modules stay private (``_utils`` is a part)."""
    bad = []
    for imp in IMPORTS:
        if part_of(imp.target) == part_of(imp.module) or part_of(imp.target) == "__init__":
            continue
        below_part = imp.target.split(".")[2:]
        if any(_private(bit) for bit in below_part) or (imp.name is not None and _private(imp.name)):
            bad.append(f"{imp.module}:{imp.line} imports {imp.target}{'.' + imp.name if imp.name else ''}")
    assert not bad, "private names imported across parts:\n" + "\n".join(sorted(bad))


def test_the_root_is_a_map():
    """(e) The root holds a handful of modules; everything else lives in a part's folder."""
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


@pytest.mark.parametrize("text, expected", [
    ("| part | job | may import |\n|---|---|---|\n| `a/` | x | `b`, `c.py` |\n| `b.py` | y | — |\n",
     {"a": {"b", "c"}, "b": set()}),
])
def test_the_table_reader(text, expected):
    assert read_may_import(text) == expected


def test_the_checks_catch_a_cycle():
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": set()}) is None
