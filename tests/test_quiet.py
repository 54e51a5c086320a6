"""Quiet, typed failures (issue 33, item 7): SQL calls that print no NOTICE, not-found
reads that log nothing, a concise first start, a bad embedder refused at once, a typed
error when the service is down."""

from __future__ import annotations

import psycopg
import pytest
from pgvector.psycopg import register_vector

from tests.sqlapi import store, unit

VEC = unit((0, 1.0))


@pytest.mark.parametrize(
    "query",
    [
        "what does Alice drink?",  # lexemes that match some paragraphs and not others
        "the of and",  # stop words only: no lexemes at all
        "zzzqqq",  # a lexeme no paragraph has
    ],
)
def test_search_passages_prints_no_notice(conn: psycopg.Connection, query: str) -> None:
    register_vector(conn)
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(f"{diag.severity}: {diag.message_primary}"))
    body = "\n\n".join(f"## Part {i}\n\nLine {i} about tea and coffee." for i in range(30))
    conn.execute(
        "select * from memex.write_file('a', 'u', 'user/drinks.md', %s, %s, 'test-model')",
        ("# Drinks\n\n" + body + "\n", VEC),
    )
    store(conn, "Alice drinks green tea.", VEC, agent="a", user="u")
    rows = conn.execute(
        "select * from memex.search_passages('a', 'u', %s, %s, 'test-model')", (query, VEC)
    ).fetchall()
    assert rows, "the passages were found"
    assert notices == []
