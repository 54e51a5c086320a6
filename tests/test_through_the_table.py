"""Everything goes through the operation table (issue 35): SQL text is sent from a short
list of places only, and each public AsyncMemex method runs an Operation
(`self.call` / `self.run`) unless it is listed below with the reason it is not one.

Run this module as a script (`python tests/test_through_the_table.py`) to print the
counts: the modules that send SQL outside the allowed places, and the methods that
bypass the table."""

from __future__ import annotations

import ast
import inspect
import textwrap
from pathlib import Path

from memexdb.client import AsyncMemex

PACKAGE = Path(__file__).resolve().parent.parent / "memexdb"

# Where SQL text may be sent from, and why. The domains' `sql.py` files hold the call
# text; their `operations.py` files run it through a Session (one operation each).
ALLOWED_SQL: dict[str, str] = {
    "session.py": "the one session: BEGIN, memex._enter or _enter_operator, the caller's"
    " delegate, batch budget and rate-limit reservation (set_config), COMMIT",
    "db.py": "connection setup: the enum types, SET ROLE memex_app on every connection",
    "migrations.py": "the migration runner: alembic, sql/*.sql, its advisory lock",
    "migration_roles.py": "the migration runner's checks of the migrating role (what a"
    " first migrate cannot create, the optional roles' functions' owners), on its"
    " connection and in its transaction",
    "halfvec.py": "`memexdb convert-embeddings`: online DDL (a column, a trigger, batched"
    " backfill, CREATE INDEX CONCURRENTLY) before revision 0037, as the login role that owns"
    " the table, outside any transaction (no Session can run CONCURRENTLY)",
    "embedded/server.py": "CREATE DATABASE on the embedded server, before any schema",
    "runtime/jobs.py": "LISTEN for the runtime's wake-ups and its advisory lock (held by"
    " one connection for the process's life: no transaction of a Session can)",
    "runtime/watch.py": "the keep-alive of that LISTEN connection (select 1)",
    "runtime/database.py": "the rate limits of the environment written at startup, as the"
    " login role, before the service's pool and embedder exist",
    "pg_cron.py": "pg_cron's cron.* catalog, as the login role that owns the jobs (not"
    " memex_app, which every Session connection is)",
    "cli.py": "`memexdb status` and serve's live-key check: read the server before the"
    " schema may exist, without loading the embedding model a Session needs",
    "cli_keys.py": "`memexdb keys bootstrap` alone (the other commands run operations):"
    " memex.api_keys' table lock, as the login role, which memex_app may not take",
    "replicas.py": "the read-replica monitor: the primary's WAL position and each"
    " replica's replay position, on connections of its own (no Session: it runs beside"
    " every caller's)",
    "operation.py": "fetch_rows / fetch_first: the `run` of an operation that is one"
    " statement, a call its domain's operations.py passes in (from its sql.py)",
}


def _is_domain_sql(relative: str) -> bool:
    parts = relative.split("/")
    return len(parts) == 2 and parts[1] in {"sql.py", "operations.py"}


def _sends_sql(tree: ast.AST) -> list[str]:
    """What in a module sends SQL: a call of .execute/.executemany/.fetch, a domain's
    `sql` module imported."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in {"execute", "executemany", "fetch"}:
                # EnumInfo.fetch(conn, ...) is psycopg's type lookup, over SQL too
                found.append(f"line {node.lineno}: .{node.func.attr}(")
        elif (
            isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memexdb.")
        ):
            for alias in node.names:
                if alias.name == "sql" or node.module.endswith(".sql"):
                    found.append(f"line {node.lineno}: imports {node.module}.{alias.name}")
    return found


def sql_senders() -> dict[str, list[str]]:
    """Every module of memexdb outside the domains' sql.py/operations.py that sends SQL."""
    senders: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if _is_domain_sql(relative):
            continue
        found = _sends_sql(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            senders[relative] = found
    return senders


# Public AsyncMemex coroutine methods that are no operation, and why.
NOT_OPERATIONS: dict[str, str] = {
    "run": "runs an operation",
    "call": "runs an operation",
    "export": "an iterator over export_page (an operation), page after page",
    "import_memories": "an iterator of batches, each run by an operation (memexdb.moving)",
    "aclose": "closes the pool",
    # the Session's own (memexdb.session): what every operation runs on
    "connect": "opens the pool and checks the embedder against the schema",
    "fetch": "one statement as the caller: what the operations' `run` functions call",
    "reserve": "the rate-limit reservation an operation makes before it embeds",
    "write_position": "the session token after a write: the primary's WAL position, no tenant"
    " data (memexdb.replicas.PRIMARY_LSN)",
}


def _runs_an_operation(method: object) -> bool:
    source = textwrap.dedent(inspect.getsource(method))  # type: ignore[arg-type]
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in {"call", "run"}
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "self"
        ):
            return True
    return False


def bypassing_methods() -> list[str]:
    """The public coroutine (and async generator) methods of AsyncMemex, its own and its
    Session's, that run no operation."""
    names = []
    for name, member in inspect.getmembers(AsyncMemex):
        if name.startswith("_") or name in NOT_OPERATIONS:
            continue
        if not (inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member)):
            continue
        if not _runs_an_operation(member):
            names.append(name)
    return names


def test_sql_is_sent_only_from_the_allowed_places() -> None:
    senders = sql_senders()
    unexpected = {module: found for module, found in senders.items() if module not in ALLOWED_SQL}
    assert not unexpected, (
        "SQL sent outside the domains' sql.py/operations.py and the allowed places"
        f" (make it an Operation, or add it to ALLOWED_SQL with the reason): {unexpected}"
    )
    stale = set(ALLOWED_SQL) - set(senders)
    assert not stale, f"allowed but sending no SQL (remove from ALLOWED_SQL): {stale}"


def test_every_public_method_runs_an_operation() -> None:
    assert bypassing_methods() == [], "make each an Operation (self.call) or list it"
    for name in NOT_OPERATIONS:
        assert hasattr(AsyncMemex, name), f"NOT_OPERATIONS names no method {name}"


def test_the_checks_see_a_bypass() -> None:
    """The checks themselves: a method over self.fetch and a module calling execute are
    seen."""

    class Bypassing(AsyncMemex):
        async def direct(self) -> None:
            await self.fetch(None, "select 1")

    assert not _runs_an_operation(Bypassing.direct)
    assert _runs_an_operation(AsyncMemex.count)
    assert _sends_sql(ast.parse("conn.execute('select 1')"))
    assert _sends_sql(ast.parse("from memexdb.health import sql"))
    assert not _sends_sql(ast.parse("x = 'select 1'"))


if __name__ == "__main__":
    senders = sql_senders()
    print(f"modules sending SQL outside the domains' sql.py/operations.py: {len(senders)}")
    for module, found in senders.items():
        print(f"  {module}: {found[0]}{' ...' if len(found) > 1 else ''}")
    bypassing = bypassing_methods()
    print(f"AsyncMemex public methods bypassing the table: {len(bypassing)}")
    print("  " + " ".join(bypassing))
