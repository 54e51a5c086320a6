"""File memory through the SQL API, as a non-Python caller uses it: virtual paths,
write/read/list/patch/delete, revisions (list, read, restore, as of a time), the access
log and smart_read's budget. Embeddings here are hand-made unit vectors (the SQL API
takes whatever vector the caller computed)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from tests.sqlapi import unit

VEC = unit((0, 1.0))
T = {"agent": "a", "user": "u"}


@pytest.fixture
def db(conn: psycopg.Connection) -> psycopg.Connection:
    register_vector(conn)
    conn.row_factory = dict_row  # type: ignore[assignment]
    return conn


def write(db: psycopg.Connection, path: str, content: str, base: int | None = None) -> Any:
    return db.execute(
        "select * from memex.write_file(%(agent)s, %(user)s, %(path)s, %(content)s, %(vec)s,"
        " 'test-model', %(base)s)",
        {**T, "path": path, "content": content, "vec": VEC, "base": base},
    ).fetchone()


def read(db: psycopg.Connection, path: str, **kw: Any) -> Any:
    return db.execute(
        "select * from memex.read_file(%(agent)s, %(user)s, %(path)s,"
        " p_from_line => %(from_line)s, p_to_line => %(to_line)s, p_as_of => %(as_of)s)",
        {**T, "path": path, "from_line": None, "to_line": None, "as_of": None, **kw},
    ).fetchone()


def patch(db: psycopg.Connection, path: str, **kw: Any) -> Any:
    args = {"heading": None, "append": None, "old_text": None, "new_text": None, **kw}
    preview = db.execute(
        "select * from memex.preview_patch(%(agent)s, %(user)s, %(path)s, %(heading)s,"
        " %(append)s, %(old_text)s, %(new_text)s)",
        {**T, "path": path, **args},
    ).fetchone()
    assert preview is not None
    return db.execute(
        "select * from memex.patch_file(%(agent)s, %(user)s, %(path)s, %(vec)s, 'test-model',"
        " %(base)s, %(heading)s, %(append)s, %(old_text)s, %(new_text)s)",
        {**T, "path": path, "vec": VEC, "base": preview["revision"], **args},
    ).fetchone()


def log(db: psycopg.Connection) -> list[tuple[str, str | None]]:
    rows = db.execute("select * from memex.access_events('a', 'u', p_limit => 1000)").fetchall()
    return [(r["operation"], r["target"]) for r in reversed(rows)]


def test_write_read_list_and_search_ranks_files(db: psycopg.Connection) -> None:
    first = write(db, "user/profile.md", "# Profile\n\nName: Alice\nLikes: tea\n")
    assert (first["revision"], first["size"], first["line_count"]) == (1, 34, 4)
    write(db, "agent/notes/x.md", "notes")
    got = read(db, "user/profile.md")
    assert got["content"] == "# Profile\n\nName: Alice\nLikes: tea\n"
    assert got["memory_id"] == first["memory_id"]
    lines = read(db, "user/profile.md", from_line=3, to_line=9)
    assert (lines["content"], lines["from_line"], lines["to_line"]) == (
        "Name: Alice\nLikes: tea",
        3,
        4,
    )
    again = write(db, "user/profile.md", "Name: Alice")
    assert again["revision"] == 2 and again["memory_id"] == first["memory_id"]
    listed = db.execute("select * from memex.list_files('a', 'u')").fetchall()
    assert [(f["path"], f["revision"], f["size"]) for f in listed] == [
        ("agent/notes/x.md", 1, 5),
        ("user/profile.md", 2, 11),
    ]
    assert [f["path"] for f in db.execute("select * from memex.list_files('a', 'u', 'user/')")] == [
        "user/profile.md"
    ]
    page = db.execute("select * from memex.list_files('a', 'u', p_limit => 1)").fetchall()
    rest = db.execute(
        "select * from memex.list_files('a', 'u', p_limit => 1, p_after => %s)", (page[0]["path"],)
    ).fetchall()
    assert [f["path"] for f in page + rest] == ["agent/notes/x.md", "user/profile.md"]
    # a file is a memory: memex.search ranks it
    hits = db.execute(
        "select id from memex.search('a', 'u', %s, p_query_text => 'Alice', p_mode => 'text')",
        (VEC,),
    ).fetchall()
    assert first["memory_id"] in [h["id"] for h in hits]
    assert log(db) == [
        ("write", "user/profile.md"),
        ("write", "agent/notes/x.md"),
        ("read", "user/profile.md"),
        ("read", "user/profile.md"),
        ("write", "user/profile.md"),
        ("list", None),
        ("list", "user/"),
        ("list", None),
        ("list", None),
    ]
    actors = {r["actor"] for r in db.execute("select actor from memex.access_log")}
    assert len(actors) == 1 and actors.pop().startswith("sql:")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/user/x.md", "relative"),
        ("user/../agent/x", ". or .."),
        ("user/./x", ". or .."),
        ("../x", "user/ or agent/"),
        ("other/x.md", "user/ or agent/"),
        ("user", "2 to 16 segments"),
        ("user//x.md", "empty segments"),
        ("user/x/", "empty segments"),
        ("user/.hidden", "hidden"),
        ("user/a b.md", "may only hold"),
        ("user/ü.md", "may only hold"),
        ("user/" + "x" * 129, "128 characters"),
        ("user/" + "/".join(["d"] * 16), "2 to 16 segments"),
        ("user/" + "a/" * 254 + "b", "1 to 512"),
        ("", "1 to 512"),
    ],
)
def test_bad_paths_are_refused(db: psycopg.Connection, path: str, message: str) -> None:
    with pytest.raises(psycopg.Error, match=message) as err:
        write(db, path, "x")
    assert err.value.sqlstate == "MX422"
    assert err.value.diag.column_name == "path"


def test_patch_append_under_heading_and_replace(db: psycopg.Connection) -> None:
    write(db, "user/notes.md", "# Notes\n\n## Food\n\n- tea\n\n## Travel\n\n- Berlin\n")
    appended = patch(db, "user/notes.md", heading="## Food", append="- coffee")
    assert appended["content"] == "# Notes\n\n## Food\n\n- tea\n- coffee\n\n## Travel\n\n- Berlin\n"
    created = patch(db, "user/notes.md", heading="Work", append="- memexdb")
    assert created["content"].endswith("- Berlin\n\n## Work\n\n- memexdb\n")
    replaced = patch(db, "user/notes.md", old_text="Berlin", new_text="Paris")
    assert "- Paris" in replaced["content"] and replaced["revision"] == 4
    with pytest.raises(psycopg.Error, match="old_text: was not found") as missing:
        patch(db, "user/notes.md", old_text="Rome", new_text="x")
    assert missing.value.sqlstate == "MX409"  # well-formed; the file's state conflicts
    with pytest.raises(psycopg.Error, match=r"appears \d+ times") as ambiguous:
        patch(db, "user/notes.md", old_text="- ", new_text="* ")
    assert ambiguous.value.sqlstate == "MX409"
    with pytest.raises(psycopg.Error, match="would be blank") as blank:
        patch(db, "user/notes.md", old_text=read(db, "user/notes.md")["content"], new_text="")
    assert blank.value.sqlstate == "MX409"
    with pytest.raises(psycopg.Error, match="over 32768") as too_long:
        patch(db, "user/notes.md", append="x" * 32768)
    assert too_long.value.sqlstate == "MX409"
    with pytest.raises(psycopg.Error, match="heading: must be one line") as bad_heading:
        patch(db, "user/notes.md", heading="## a\nb", append="x")
    assert bad_heading.value.sqlstate == "MX422"
    assert read(db, "user/notes.md")["revision"] == 4  # never a partial write
    # appending to a file that does not exist creates it; replacing in one is MX404
    log_file = patch(db, "user/log.md", heading="## 2026-12-03", append="hello")
    assert (log_file["content"], log_file["revision"]) == ("## 2026-12-03\n\nhello\n", 1)
    with pytest.raises(psycopg.Error) as absent:
        patch(db, "user/none.md", old_text="a", new_text="b")
    assert absent.value.sqlstate == "MX404"


def test_stale_base_revision_is_refused(db: psycopg.Connection) -> None:
    write(db, "user/a.md", "one", base=0)
    with pytest.raises(psycopg.Error, match="at revision 1, not 0") as exists:
        write(db, "user/a.md", "two", base=0)
    assert exists.value.sqlstate == "MX409"
    write(db, "user/a.md", "two", base=1)
    with pytest.raises(psycopg.Error) as stale:
        write(db, "user/a.md", "three", base=1)
    assert stale.value.sqlstate == "MX409"
    with pytest.raises(psycopg.Error) as stale_patch:
        db.execute(
            "select * from memex.patch_file('a', 'u', 'user/a.md', %s, 'm', 1, p_append => 'x')",
            (VEC,),
        )
    assert stale_patch.value.sqlstate == "MX409"
    with pytest.raises(psycopg.Error) as stale_delete:
        db.execute("select * from memex.delete_file('a', 'u', 'user/a.md', 1)")
    assert stale_delete.value.sqlstate == "MX409"
    assert read(db, "user/a.md")["content"] == "two"


def test_revisions_restore_delete_and_as_of(db: psycopg.Connection) -> None:
    write(db, "user/p.md", "v1")
    between = db.execute("select clock_timestamp() as t").fetchone()["t"]
    write(db, "user/p.md", "v2")
    deleted = db.execute("select * from memex.delete_file('a', 'u', 'user/p.md')").fetchone()
    assert (deleted["revision"], deleted["content"]) == (3, "v2")
    with pytest.raises(psycopg.Error) as gone:
        read(db, "user/p.md")
    assert gone.value.sqlstate == "MX404"
    assert (
        db.execute("select count(*) as n from memex.memories where path is not null").fetchone()[
            "n"
        ]
        == 0
    )
    revisions = db.execute("select * from memex.list_revisions('a', 'u', 'user/p.md')").fetchall()
    assert [(r["revision"], r["operation"], r["size"]) for r in revisions] == [
        (3, "delete", 0),
        (2, "write", 2),
        (1, "write", 2),
    ]
    assert all(r["content"] is None and r["actor"].startswith("sql:") for r in revisions)
    one = db.execute("select * from memex.get_revision('a', 'u', 'user/p.md', 1)").fetchone()
    assert one["content"] == "v1"
    assert read(db, "user/p.md", as_of=between)["content"] == "v1"
    with pytest.raises(psycopg.Error) as before:
        read(db, "user/p.md", as_of=datetime(2000, 1, 1, tzinfo=UTC))
    assert before.value.sqlstate == "MX404"
    with pytest.raises(psycopg.Error) as of_delete:
        db.execute(
            "select * from memex.restore_revision('a', 'u', 'user/p.md', 3, %s, 'm')", (VEC,)
        )
    assert of_delete.value.sqlstate == "MX409"
    restored = db.execute(
        "select * from memex.restore_revision('a', 'u', 'user/p.md', 1, %s, 'm', 0)", (VEC,)
    ).fetchone()
    assert (restored["revision"], restored["content"]) == (4, "v1")
    last = db.execute("select * from memex.get_revision('a', 'u', 'user/p.md', 4)").fetchone()
    assert (last["operation"], last["details"]) == ("restore", {"restored": 1})
    with pytest.raises(psycopg.Error) as no_such:
        db.execute("select * from memex.get_revision('a', 'u', 'user/p.md', 9)")
    assert no_such.value.sqlstate == "MX404"
    assert [op for op, _ in log(db)] == [
        "write", "write", "delete", "revisions", "read_revision", "read", "restore",
        "read_revision",
    ]  # fmt: skip


def test_smart_read_never_exceeds_its_budget(db: psycopg.Connection) -> None:
    write(db, "user/profile.md", "Alice likes green tea and hiking in the Alps. " * 30)
    write(db, "user/short.md", "Alice's cat is called Miso.")
    db.execute("select memex.store('a', 'u', 'Alice drinks tea every morning', %s, 'm')", (VEC,))
    for budget in (100, 150, 250, 400, 1000, 5000):
        got = db.execute(
            "select * from memex.smart_read('a', 'u', 'What does Alice drink? tea', %s,"
            " p_budget => %s)",
            (VEC, budget),
        ).fetchone()
        assert got["chars"] == len(got["context"]) <= budget
        for source in got["sources"]:
            header = "### " + (source.get("path") or f"memory {source['id']}")
            assert header in got["context"]
    assert len(got["sources"]) == 3 and "Miso" in got["context"]
    with pytest.raises(psycopg.Error) as small:
        db.execute("select * from memex.smart_read('a', 'u', 'q', %s, p_budget => 99)", (VEC,))
    assert small.value.sqlstate == "MX422"


def test_erase_user_and_retention(db: psycopg.Connection) -> None:
    write(db, "user/p.md", "v1")
    db.execute("select * from memex.access_events('a', 'u')")
    db.execute("update memex.access_log set at = now() - interval '91 days'")
    write(db, "user/q.md", "v1")
    result = db.execute("select * from memex.maintenance()").fetchone()
    assert result["access_log_rows_deleted"] == 1
    db.execute("insert into memex.settings (name, value) values ('access_log_retention_days', '0')")
    assert (
        db.execute("select * from memex.maintenance()").fetchone()["access_log_rows_deleted"] == 1
    )
    write(db, "user/r.md", "v1")
    erased = dict(
        (r["table_name"], r["deleted"])
        for r in db.execute("select * from memex.erase_user('a', 'u', 'u')").fetchall()
    )
    assert erased == {
        "memories": 3,
        "tenants": 1,
        "file_revisions": 3,
        "access_log": 1,
        "consolidation_runs": 0,
    }


def test_memory_calls_cannot_bypass_a_files_revisions(db: psycopg.Connection) -> None:
    file_id = write(db, "user/p.md", "v1")["memory_id"]
    with pytest.raises(psycopg.Error, match="memory_delete") as forget:
        db.execute("select * from memex.forget('a', 'u', %s)", (file_id,))
    assert forget.value.sqlstate == "MX409"  # a valid call the memory's state refuses
    with pytest.raises(psycopg.Error, match="memory_write") as update:
        db.execute(
            "select * from memex.update_memory('a', 'u', %s, p_content => 'v2',"
            " p_embedding => %s, p_embedding_model => 'm')",
            (file_id, VEC),
        )
    assert update.value.sqlstate == "MX409"
    # its importance and metadata are a memory's, not the file's content
    db.execute("select * from memex.update_memory('a', 'u', %s, p_importance => 1.5)", (file_id,))
    assert read(db, "user/p.md")["content"] == "v1"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        ("memex.get_revision('a', 'u', 'user/p.md', 0)", "revision"),
        ("memex.restore_revision('a', 'u', 'user/p.md', null, %(vec)s, 'm')", "revision"),
        ("memex.diff_revisions('a', 'u', 'user/p.md', 0, 1)", "from_revision"),
        ("memex.diff_revisions('a', 'u', 'user/p.md', 1, -1)", "to_revision"),
        ("memex._check_revision(0)", "revision"),
        ("memex._check_revision(null, 'from_revision')", "from_revision"),
    ],
)
def test_a_revision_number_is_one_or_more(db: psycopg.Connection, call: str, field: str) -> None:
    """One rule, memex._check_revision, for every function that names a file's revision."""
    write(db, "user/p.md", "v1")
    with pytest.raises(psycopg.Error) as invalid:
        db.execute(f"select * from {call}", {"vec": VEC})
    assert (invalid.value.sqlstate, invalid.value.diag.column_name) == ("MX422", field)
    assert str(invalid.value).startswith(f"{field}: must be a revision number (1 or more)")
