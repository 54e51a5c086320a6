"""Freeze the alembic revisions' SQL into sql/revisions/*.sql (run once, issue 38).

Each revision up to 0034 was a Python module whose upgrade() ran `op.execute(...)` on
SQL strings (some in loops over lists of signatures or tables). This tool ran each
upgrade() with an `op` that records the strings instead of running them, and wrote them,
in order and verbatim (only the whitespace around each statement stripped), as
`sql/revisions/<the module's name>.sql`, headed by the revision's docstring. Those files
are now the revisions: frozen (tests/revision_checksums.txt), listed in sql/manifest.txt,
and run by alembic's thin wrappers (memexdb.migrations.run_revision) and by the
TypeScript package's migrate(). A new revision is written as SQL directly
(docs/development.md, "Adding a revision"); this tool is kept to show how the first 34
were made, and refuses to overwrite a file that exists.

    .venv/bin/python -m tools.freeze_revisions path/to/old/alembic/versions
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "sql" / "revisions"


def statements(path: Path) -> tuple[str, list[str]]:
    """The revision's docstring and the SQL its upgrade() executes, in order."""
    spec = importlib.util.spec_from_file_location(f"_frozen_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    recorded: list[str] = []

    def execute(sql: object) -> None:
        assert isinstance(sql, str), f"{path.name}: op.execute of {type(sql).__name__}"
        recorded.append(sql)

    module.op = SimpleNamespace(execute=execute)
    module.upgrade()
    return module.__doc__ or "", recorded


def frozen_text(path: Path) -> str:
    doc, recorded = statements(path)
    header = [f"-- Revision {path.stem.split('_', 1)[0]}, frozen from {path.name}."]
    header += [f"-- {line}".rstrip() for line in doc.strip().splitlines()]
    body = []
    for sql in recorded:
        sql = sql.strip()
        body.append(sql if sql.endswith(";") else sql + ";")
    return "\n".join(header) + "\n\n" + "\n\n".join(body) + "\n"


def main(versions: Path) -> None:
    OUT.mkdir(exist_ok=True)
    for path in sorted(versions.glob("[0-9]*.py")):
        target = OUT / f"{path.stem}.sql"
        if target.exists():
            print(f"{target.relative_to(ROOT)} exists: left as it is")
            continue
        target.write_text(frozen_text(path), encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT)}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
