"""The import graph of the memexdb package, read from its source (no import runs): every
`import` of a memexdb module anywhere in a file (module level, in functions, under
TYPE_CHECKING), as an edge from module to module. Prints the import cycles (strongly
connected components of more than one module) and the upward imports (an import of a module
in a higher layer than the importer's, layers as LAYERS says), and exits 1 when there is any.

    python tools/import_graph.py          # the summary: cycles, upward imports
    python tools/import_graph.py --edges  # every edge, for a reader

tests/test_layers.py runs the same checks.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "memexdb"

# From the bottom up; a module may import its own layer and the layers below it. A module
# is placed by its longest matching prefix (a package name covers its modules).
LAYERS: tuple[tuple[str, ...], ...] = (
    # 0. shared foundations: field types, errors, settings, adapters of outside things
    (
        "memexdb.errors",
        "memexdb.fields",
        "memexdb.error_models",
        "memexdb.types",
        "memexdb.config",
        "memexdb.logs",
        "memexdb.embedding",
        "memexdb.embedded",
        "memexdb.llm",
        "memexdb.port_check",
        "memexdb.paging",
        "memexdb.metrics",
    ),
    # 1. the database session, the pool, migrations and the operation type
    (
        "memexdb.db",
        "memexdb.pipeline",
        "memexdb.session",
        "memexdb.replicas",
        "memexdb.migrations",
        "memexdb.migration_roles",
        "memexdb.halfvec",
        "memexdb.operation",
        "memexdb.core",
        "memexdb.resources",
    ),
    # 2. the domain slices (each: models, SQL call text, operations)
    (
        "memexdb.memories",
        "memexdb.files",
        "memexdb.keys",
        "memexdb.consolidation",
        "memexdb.embeddings",
        "memexdb.health",
        "memexdb.pg_cron",
        "memexdb.export_format",
        "memexdb.moving",
    ),
    # 3. the clients: one typed method per operation (AsyncMemex, Memex)
    ("memexdb.client", "memexdb.langgraph_store"),
    # 4. the LLM orchestration over the client, and the table of every operation
    ("memexdb.agentic", "memexdb.operation_table"),
    # 5. what runs them: the service's runtime
    ("memexdb.runtime", "memexdb.supervisor", "memexdb.bearer", "memexdb.heap"),
    # 6. the frontends
    (
        "memexdb.rest",
        "memexdb.mcp",
        "memexdb.console",
        "memexdb.service",
        "memexdb.cli",
        "memexdb.cli_keys",
        "memexdb.cli_consolidate",
        "memexdb.cli_schedule",
    ),
    # 7. the package's front door (re-exports of the client)
    ("memexdb",),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            # `from pkg import mod` imports pkg.mod when that is a module, else pkg
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and target.startswith("memexdb"):
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {name: imports(name, path, known) for name, path in mods.items()}


def layer(name: str) -> int:
    best, level = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), index
    if level < 0:
        raise SystemExit(f"{name}: in no layer of tools/import_graph.py LAYERS")
    return level


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def is_package_of(name: str, other: str) -> bool:
    """A package's __init__ may import its own modules, and they their package: Python
    runs a package's __init__ before any of its modules, so this adds no order. (So the
    root package's `__version__` may be read anywhere.)"""
    return other.startswith(name + ".") or name.startswith(other + ".")


def upward(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    return sorted(
        (name, other)
        for name, others in edges.items()
        for other in others
        if layer(other) > layer(name) and not is_package_of(name, other)
    )


def main() -> int:
    edges = graph()
    if "--edges" in sys.argv:
        for name in sorted(edges):
            for other in sorted(edges[name]):
                print(f"{name} -> {other}")
    found = cycles(edges)
    ups = upward(edges)
    print(f"import cycles: {len(found)}")
    for component in found:
        print("  cycle: " + " <-> ".join(component))
    print(f"upward imports: {len(ups)}")
    for name, other in ups:
        print(f"  {name} (layer {layer(name)}) -> {other} (layer {layer(other)})")
    return 1 if found or ups else 0


if __name__ == "__main__":
    raise SystemExit(main())
