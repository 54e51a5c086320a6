"""Every function header of sql/ is laid out one way (docs/sql-api.md): the attributes on
one line after `returns`, in one order, as tools/sql_layout.py writes them."""

from __future__ import annotations

from tools.sql_layout import SQL, function_files, layout


def test_every_sql_file_is_laid_out() -> None:
    stale = [
        str(path.relative_to(SQL.parent))
        for path in function_files()
        if layout(path.read_text(), path.name) != path.read_text()
    ]
    assert not stale, f"run `python tools/sql_layout.py`: {stale}"


def test_layout_joins_attributes_and_keeps_the_body() -> None:
    text = "\n".join(
        [
            "create or replace function memex.f(p_a text)",
            "returns table (",
            "    a text",
            ")",
            "security definer",
            "language plpgsql",
            "stable",
            "set search_path = pg_catalog, pg_temp",
            "-- why: a job yields to writers",
            "set lock_timeout = '200ms'",
            "as $$",
            "language sql",
            "stable",
            "$$;",
        ]
    )
    assert layout(text, "f.sql").split("\n")[4:] == [
        "language plpgsql stable security definer set search_path = pg_catalog, pg_temp",
        "-- why: a job yields to writers",
        "set lock_timeout = '200ms'",
        "as $$",
        "language sql",
        "stable",
        "$$;",
    ]
    assert layout(layout(text, "f.sql"), "f.sql") == layout(text, "f.sql")
