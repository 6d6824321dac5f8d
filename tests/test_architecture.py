"""The layout docs/architecture.md describes is the layout the imports have.

Every module of ``pandas_dp`` is read with :mod:`ast` (nothing is imported), each
import is mapped from the importing module's top-level part (``releases``,
``noise``, ``errors``...) to the imported one's, and the edges are checked against
the "may import" table of docs/architecture.md, parsed from the page itself so the
page and this test cannot drift:

(a) every import between parts is allowed by the table (imports under
    ``if TYPE_CHECKING:`` are exempt: they never run);
(b) neither the table nor the imports have a cycle between parts;
(c) at most 2 function-local imports of package modules, each with a comment
    on its line saying why it is local;
(d) no part imports another part's private names or private modules;
(e) the package root holds at most 8 modules;
(f) no import loop between any two modules (file level, function-local imports counted);
(g) only ``engines/`` reads the caller's rows: no module outside it calls a row-reading operation
    (``value_counts``, ``groupby``, ``map_partitions``, ``np.bincount`` over a column, iterating rows,
    ``len``...) on the caller's frame or on anything taken from it;
(h) one way to mark something internal: a leading underscore (on a module or a name), private to its
    folder; no ``internal.py`` modules.
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
MAX_LOCAL_IMPORTS = 1  # lazy pandera (domain.geography); the lazy accessors import through importlib
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


# (f) ---------------------------------------------------------------------------------------------

def module_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (function-local imports included, TYPE_CHECKING ones not).

    ``from pandas_dp.a import name`` is an edge to the module ``pandas_dp.a`` (to ``pandas_dp.a.name`` when
    that is a module), so a loop through a package's ``__init__`` counts like any other."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for imp in IMPORTS:
        if imp.type_checking:
            continue
        target = imp.target
        while target not in MODULES and "." in target:
            target = target.rpartition(".")[0]
        if target != imp.module:
            graph[imp.module].add(target)
    return graph


def import_loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one node (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                loops.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(loops)


def test_no_import_loop_between_modules():
    """(f) Every folder is a stack of modules: no two modules import each other, directly or around a loop."""
    loops = import_loops(module_graph())
    assert not loops, "modules that import each other in a loop:\n" + "\n".join(" <-> ".join(c) for c in loops)


def test_the_loop_finder():
    assert import_loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert import_loops({"a": {"b"}, "b": set()}) == []


# (g) ---------------------------------------------------------------------------------------------

#: The names a release function gives the caller's frame (``pipeline.run(frame, ...)``, ``check_persons(frame)``).
FRAME_NAMES = frozenset({"frame", "df", "persons", "data"})
#: Attributes of a frame that are public metadata, not rows: reading them (or anything reached through them,
#: e.g. ``frame[c].dtype.categories``) reveals nothing private. ``dp`` is the accessor: a release.
METADATA = frozenset({"columns", "dtypes", "dtype", "name", "ndim", "attrs", "dp", "npartitions", "__class__"})
#: Built-ins that read the rows of what they are given.
ROW_BUILTINS = frozenset({"len", "iter", "list", "tuple", "sorted", "set", "dict", "sum", "min", "max", "any", "all"})
#: Row-reading operations that no module on the release path (accessors, releases, the CLI) calls on anything:
#: counting is the engines' job, on whatever name the frame has.
ROW_OPERATIONS = frozenset({"value_counts", "groupby", "map_partitions", "iterrows", "itertuples", "bincount",
                            "crosstab", "pivot_table", "nunique"})
RELEASE_PATH = ("accessors", "releases", "cli")
#: Modules outside ``engines/`` that take a frame by one of FRAME_NAMES that is NOT the caller's private frame.
NOT_THE_CALLERS_ROWS = {
    "testing": "assert_dp is the auditor: it builds neighbouring frames from a test frame by design",
    "results": "a result's `frame` is its own table of noisy estimates",
    "domain.schema": "validates public tables (hierarchies, group tables), never the private rows",
    "domain.persons_check": "the custodian's own check of their rows against a public tree (pandas_dp.schema."
                            "check_persons): its report goes to the data holder, never into a release",
    "__main__": "the demo prints the noisy tables it released",
}


def _chain_root(node: ast.AST) -> str | None:
    """The name an attribute/subscript/call chain starts from (``frame[c].str.len()`` -> ``frame``); None when
    the chain passes through public metadata (``frame[c].dtype.categories``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Attribute) and node.attr in METADATA:
            return None
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def row_reads(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[int, str]]:
    """Where ``function`` reads rows of the frame it was given (by a FRAME_NAMES parameter) or of anything
    taken from it by subscript or attribute (``col = frame[c]``), as (line, what)."""
    args = function.args
    tainted = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs} & FRAME_NAMES
    if not tainted:
        return []
    grown = True
    while grown:  # names bound to a piece of the frame are the frame too
        grown = False
        for node in ast.walk(function):
            value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) else None
            if value is None or isinstance(value, ast.Call) or _chain_root(value) not in tainted:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]  # type: ignore[union-attr]
            for name in (n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)):
                if name not in tainted:
                    tainted.add(name)
                    grown = True
    found = []
    for node in ast.walk(function):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr not in METADATA:
            if _chain_root(node.value) in tainted:
                found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, (ast.For, ast.AsyncFor)) and _chain_root(node.iter) in tainted:
            found.append((node.lineno, "iterates its rows"))
        elif isinstance(node, ast.comprehension) and _chain_root(node.iter) in tainted:
            found.append((node.iter.lineno, "iterates its rows"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ROW_BUILTINS:
            if any(_chain_root(a) in tainted for a in node.args):
                found.append((node.lineno, f"{node.func.id}()"))
    return found


def _exempt(module: str) -> bool:
    inner = module.removeprefix("pandas_dp.")
    return any(inner == key or inner.startswith(key + ".") for key in NOT_THE_CALLERS_ROWS)


def test_only_engines_read_the_callers_rows():
    """(g) Outside ``engines/``, a function that gets the caller's frame passes it on (to the pipeline, an engine,
    a check of its column labels) or reads its metadata; it never reads a row."""
    bad = []
    for module, path in MODULES.items():
        if part_of(module) == "engines" or _exempt(module):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                bad += [f"{module}:{line} {node.name}: {what}" for line, what in row_reads(node)]
    assert not bad, "row reads of the caller's frame outside engines/:\n" + "\n".join(sorted(bad))


def test_the_release_path_calls_no_row_operation():
    """(g) accessors/, releases/ and cli/ call no counting operation at all, whatever the frame is named."""
    bad = []
    for module, path in MODULES.items():
        if part_of(module) not in RELEASE_PATH:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ROW_OPERATIONS:
                bad.append(f"{module}:{node.lineno} .{node.func.attr}()")
    assert not bad, "row operations on the release path (they belong in an engine):\n" + "\n".join(sorted(bad))


@pytest.mark.parametrize("source, expected", [
    ("def f(frame):\n    return frame['a'].value_counts()\n", [(2, ".value_counts")]),
    ("def f(frame):\n    col = frame['a']\n    return len(col)\n", [(3, "len()")]),
    ("def f(frame):\n    for row in frame.itertuples():\n        pass\n", [(2, ".itertuples"), (2, "iterates its rows")]),
    ("def f(frame):\n    return frame['a'].dtype.categories, frame.columns, run(frame)\n", []),
    ("def f(table):\n    return table.groupby('a').size()\n", []),
])
def test_the_row_read_finder(source, expected):
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef)
    assert sorted(row_reads(function)) == sorted(expected)


# (h) ---------------------------------------------------------------------------------------------

def test_one_way_to_mark_internal():
    """(h) A leading underscore marks a module or a name private to its folder (test (d) enforces it across
    parts); nothing else does: no ``internal.py``-style modules."""
    odd = sorted(m for m in MODULES if m.rpartition(".")[2] in {"internal", "internals", "private"})
    assert not odd, f"modules marked internal by their name instead of a leading underscore: {odd}"
