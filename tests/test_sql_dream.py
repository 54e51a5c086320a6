"""Dreaming over files in SQL, as pg_cron or any SQL client runs it: memex.dream_tenant and
memex.dream_due. A dream merges repeated headings and removes duplicate lines, writes as
dream-agent through the files' one write path, and never loses a line that is not a
duplicate: every test states the exact content it expects."""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from tests.sqlapi import unit

A, U = "agent", "user"
VEC = unit((0, 1.0))
LATER = datetime.now(UTC) + timedelta(hours=2)  # past the grace period of what we write

PROFILE = (
    "# Profile\n"
    "\n"
    "- Likes green tea\n"
    "- Lives in Lyon\n"
    "- likes green tea.\n"
    "* LIKES   green tea!\n"
    "1. Likes green tea\n"
    "- Likes green tea and coffee\n"
    "\n"
    "## Preferences\n"
    "\n"
    "- Dark mode\n"
    "- Lives in Lyon\n"
    "\n"
    "## Work\n"
    "\n"
    "- Engineer at Acme\n"
    "- Projects\n"
    "  - status: done\n"
    "- Hobbies\n"
    "  - status: done\n"
    "\n"
    "```\n"
    "print('hi')\n"
    "print('hi')\n"
    "```\n"
    "---\n"
    "---\n"
    "\n"
    "##  preferences\n"
    "\n"
    "- dark mode\n"
    "- Quiet mornings\n"
)
TIDY_PROFILE = (
    "# Profile\n"
    "\n"
    "- Likes green tea\n"
    "- Lives in Lyon\n"
    "- Likes green tea and coffee\n"
    "\n"
    "## Preferences\n"
    "\n"
    "- Dark mode\n"
    "- Quiet mornings\n"
    "\n"
    "## Work\n"
    "\n"
    "- Engineer at Acme\n"
    "- Projects\n"
    "  - status: done\n"
    "- Hobbies\n"
    "  - status: done\n"
    "\n"
    "```\n"
    "print('hi')\n"
    "print('hi')\n"
    "```\n"
    "---\n"
    "---\n"
)


@pytest.fixture
def db(conn: psycopg.Connection) -> psycopg.Connection:
    register_vector(conn)
    conn.row_factory = dict_row  # type: ignore[assignment]
    return conn


def write(db: psycopg.Connection, path: str, content: str, *, user: str = U) -> Any:
    return db.execute(
        "select * from memex.write_file(%s, %s, %s, %s, %s, 'test-model')",
        (A, user, path, content, VEC),
    ).fetchone()


def dream(db: psycopg.Connection, *, user: str = U, **args: Any) -> Any:
    names = "".join(f", p_{k} => %({k})s" for k in args)
    return db.execute(
        f"select * from memex.dream_tenant(%(a)s, %(u)s{names})", {"a": A, "u": user, **args}
    ).fetchone()


def content(db: psycopg.Connection, path: str, *, user: str = U) -> str | None:
    row = db.execute(
        "select content from memex.memories where agent_id = %s and user_id = %s and path = %s",
        (A, user, path),
    ).fetchone()
    return None if row is None else str(row["content"])


def revisions(db: psycopg.Connection, path: str, *, user: str = U) -> list[Any]:
    return db.execute(
        "select revision, operation, actor, details from memex.file_revisions"
        " where agent_id = %s and user_id = %s and path = %s order by revision",
        (A, user, path),
    ).fetchall()


def written(db: psycopg.Connection) -> dict[str, Any]:
    """Everything a dream could write, to compare before and after."""
    row = db.execute(
        "select (select count(*) from memex.file_revisions) as revisions,"
        " (select count(*) from memex.access_log) as log,"
        " (select count(*) from memex.consolidation_runs) as runs,"
        " (select count(*) from memex.embed_queue) as queued,"
        " (select jsonb_object_agg(agent_id || '/' || user_id || '/' || path, content)"
        "  from memex.memories where path is not null) as files,"
        " (select jsonb_object_agg(agent_id || '/' || user_id, last_dreamed_at)"
        "  from memex.tenants) as dreamed"
    ).fetchone()
    assert row is not None
    return dict(row)


def test_duplicates_and_repeated_headings_merge_and_unique_lines_stay(
    db: psycopg.Connection,
) -> None:
    profile = write(db, "user/profile.md", PROFILE)
    write(db, "agent/notes.md", "Prefers email.\nprefers  EMAIL\nCall on Mondays\n")
    write(db, "agent/plan.md", "# Plan\n\n- step one\n- step two\n")  # tidy already
    run = dream(db, now=LATER)
    assert run["status"] == "done" and run["kind"] == "dream" and run["id"] is not None, run
    assert (run["files_in"], run["files_out"], run["files_touched"]) == (3, 2, 2)
    assert content(db, "user/profile.md") == TIDY_PROFILE
    assert content(db, "agent/notes.md") == "Prefers email.\nCall on Mondays\n"
    assert content(db, "agent/plan.md") == "# Plan\n\n- step one\n- step two\n"
    assert run["details"]["files"] == [
        {
            "path": "agent/notes.md",
            "read_revision": 1,
            "revision": 2,
            "lines_removed": 1,
            "headings_merged": 0,
            "removed": ["prefers  EMAIL"],
        },
        {
            "path": "user/profile.md",
            "read_revision": 1,
            "revision": 2,
            "lines_removed": 5,
            "headings_merged": 1,
            "removed": [
                "- likes green tea.",
                "* LIKES   green tea!",
                "1. Likes green tea",
                "- Lives in Lyon",
                "- dark mode",
            ],
        },
    ]
    # the same write path as every write: a revision and an access-log entry, by
    # dream-agent on behalf of the caller (here the operator), based on the revision read
    rev = revisions(db, "user/profile.md")
    assert [(r["revision"], r["operation"], r["actor"]) for r in rev] == [
        (1, "write", rev[0]["actor"]),
        (2, "write", "dream-agent"),
    ]
    assert rev[1]["details"]["on_behalf_of"] == rev[0]["actor"]
    assert rev[0]["actor"].startswith("sql:")
    assert rev[1]["details"]["dream"] == {
        "run": run["id"],
        "lines_removed": 5,
        "headings_merged": 1,
    }
    entry = db.execute(
        "select actor, operation, details from memex.access_log"
        " where target = 'user/profile.md' order by id desc limit 1"
    ).fetchone()
    assert entry["actor"] == "dream-agent" and entry["details"]["revision"] == 2
    assert entry["details"]["on_behalf_of"] == rev[0]["actor"]
    row = db.execute(
        "select actor, embedding = %s as same from memex.memories where id = %s",
        (VEC, profile["memory_id"]),
    ).fetchone()
    assert row == {"actor": "dream-agent", "same": True}  # its vector stands in meanwhile
    queued = {r["memory_id"] for r in db.execute("select memory_id from memex.embed_queue")}
    log_id = db.execute(
        "select id from memex.memories where path = 'user/dream-log.md'"
    ).fetchone()["id"]
    notes_id = db.execute("select id from memex.memories where path = 'agent/notes.md'").fetchone()
    assert queued == {profile["memory_id"], notes_id["id"], log_id}
    # one dream-log line per file, under today's heading
    log = content(db, "user/dream-log.md")
    assert log is not None
    assert re.fullmatch(
        r"## \d{4}-\d\d-\d\d\n\n"
        r"- \d\d:\d\d agent/notes\.md: 1 duplicate line removed\n"
        r"- \d\d:\d\d user/profile\.md: 5 duplicate lines removed, 1 repeated heading merged\n",
        log,
    ), log
    assert run["details"]["log"] == {"path": "user/dream-log.md", "revision": 1}
    assert [(r["operation"], r["actor"]) for r in revisions(db, "user/dream-log.md")] == [
        ("patch", "dream-agent")
    ]
    stored = db.execute("select * from memex.consolidation_runs").fetchall()
    assert len(stored) == 1 and stored[0] == run
    assert run["actor"] == "dream-agent" and run["finished_at"] >= run["started_at"]
    dreamed = db.execute("select last_dreamed_at from memex.tenants").fetchone()
    assert dreamed["last_dreamed_at"] is not None


def test_a_second_dream_with_nothing_new_writes_nothing(db: psycopg.Connection) -> None:
    write(db, "user/profile.md", "- tea\n- Tea.\n")
    first = dream(db, now=LATER)
    assert first["status"] == "done"
    before = written(db)
    again = dream(db, now=LATER)
    assert again["status"] == "nothing" and again["id"] is None
    assert again["details"]["reason"].startswith("no file written since the last dream")
    # an operator's forced run over tidy files: read, nothing to change, nothing logged;
    # the run is recorded with no file touched (MemexAI records its no-op runs)
    forced = dream(db, now=LATER, force=True)
    assert forced["status"] == "done" and forced["files_in"] == 1
    assert forced["id"] is not None and (forced["files_out"], forced["files_touched"]) == (0, 0)
    assert forced["details"] == {"reason": "1 file read, nothing to tidy"}
    after = written(db)
    assert after.pop("dreamed") != before.pop("dreamed")  # the forced run's time
    assert after.pop("runs") == before.pop("runs") + 1
    assert after == before  # no revision, no log entry, nothing queued
    # written again: due again after the grace period, a second entry under the same day
    write(db, "user/profile.md", "- tea\n- coffee\n- Coffee!\n")
    fresh = dream(db)
    assert "within the grace period" in fresh["details"]["reason"]
    second = dream(db, now=LATER)
    assert second["status"] == "done" and content(db, "user/profile.md") == "- tea\n- coffee\n"
    log = content(db, "user/dream-log.md")
    assert log is not None and log.count("user/profile.md") == 2
    headings = re.findall(r"^## .*$", log, re.MULTILINE)
    assert len(headings) == len(set(headings))  # one heading a day


def test_excluded_files_are_never_read_or_written(db: psycopg.Connection) -> None:
    excluded = {
        "user/log.md": "## 2026-01-01\n\n- 10:00 hi\n- 10:00 hi\n",
        "user/dream-log.md": "## 2026-01-01\n\n- 10:00 x\n- 10:00 x\n",
        "user/notes-log.md": "- same\n- same\n",
        "agent/x.log": "same\nsame\n",
        "user/log-20260101120000.md": "- a\n- a\n",
    }
    for path, text in excluded.items():
        write(db, path, text)
    # writes to logs alone do not make a tenant due
    nothing = dream(db, now=LATER)
    assert nothing["details"] == {"reason": "no files to dream over"}
    write(db, "user/profile.md", "- tidy\n")
    write(db, "user/log.md", excluded["user/log.md"] + "- 11:00 more\n")
    tidy = dream(db, now=LATER, force=True)
    assert (tidy["status"], tidy["files_in"], tidy["files_touched"]) == ("done", 1, 0)
    excluded["user/log.md"] += "- 11:00 more\n"
    write(db, "user/todo.md", "- a\n- a\n")
    run = dream(db, now=LATER)
    assert (run["status"], run["files_in"], run["files_out"]) == ("done", 1, 1)
    for path, text in excluded.items():
        if path == "user/dream-log.md":
            # the dream log itself is only appended to
            log = content(db, path)
            assert log is not None and log.startswith(text + "\n## ")
            assert log.endswith(" user/todo.md: 1 duplicate line removed\n")
        else:
            assert content(db, path) == text, path  # byte for byte
            assert all(r["actor"] != "dream-agent" for r in revisions(db, path))


def test_dry_run_writes_nothing(db: psycopg.Connection) -> None:
    write(db, "user/profile.md", "## A\n- a\n## B\n- b\n## A\n- a\n- c\n")
    write(db, "user/other.md", "x\n")
    before = written(db)
    plan = dream(db, now=LATER, dry_run=True)
    assert plan["status"] == "dry_run" and plan["id"] is None
    assert (plan["files_in"], plan["files_out"]) == (2, 1)
    assert plan["details"]["files"] == [
        {
            "path": "user/profile.md",
            "read_revision": 1,
            "lines_removed": 1,
            "headings_merged": 1,
            "removed": ["- a"],
        }
    ]
    ticked = db.execute("select * from memex.dream_due(p_dry_run => true, p_now => %s)", (LATER,))
    assert [(r["status"], r["files_out"]) for r in ticked] == [("dry_run", 1)]
    assert written(db) == before
    run = dream(db, now=LATER)
    assert run["status"] == "done"
    assert content(db, "user/profile.md") == "## A\n- a\n- c\n## B\n- b\n"


def test_paused_and_fresh_tenants_wait(db: psycopg.Connection) -> None:
    write(db, "user/profile.md", "- a\n- a\n")
    fresh = dream(db)  # just written: within the grace period
    assert fresh["status"] == "nothing" and "grace period" in fresh["details"]["reason"]
    db.execute("update memex.tenants set dream_paused = true")
    paused = dream(db, now=LATER)
    assert paused["details"] == {"reason": "paused"}
    assert (
        db.execute("select count(*) as n from memex.dream_due(p_now => %s)", (LATER,)).fetchone()[
            "n"
        ]
        == 0
    )
    assert content(db, "user/profile.md") == "- a\n- a\n"
    forced = dream(db, force=True)  # an operator's manual run
    assert forced["status"] == "done" and content(db, "user/profile.md") == "- a\n"


def test_a_file_written_meanwhile_is_skipped_not_clobbered(
    db: psycopg.Connection, dsn: str
) -> None:
    write(db, "user/a.md", "- x\n- x\n")
    write(db, "user/b.md", "- y\n- y\n")
    result: dict[str, Any] = {}
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as own:
                result["run"] = own.execute(
                    "select * from memex.dream_tenant(%s, %s, p_now => %s)", (A, U, LATER)
                ).fetchone()
        except BaseException as exc:
            errors.append(exc)

    with psycopg.connect(dsn) as writer:  # a transaction left open: its write is in flight
        register_vector(writer)
        writer.execute(
            "select memex.write_file(%s, %s, 'user/b.md', %s, %s, 'test-model')",
            (A, U, "- y\n- y\n- mine\n", VEC),
        )
        dreamer = threading.Thread(target=run)
        dreamer.start()
        waiting = 0
        # until the dream waits for the writer (at most 20 s): for b.md's lock, or, writing
        # a.md first, for the user's revision numbering (memex._history_id), which the
        # writer's open transaction holds until it commits
        for _ in range(400):
            waiting = db.execute(
                "select count(*) as n from pg_locks where not granted"
                " and pid <> pg_backend_pid()"
                " and (database is null or"
                "      database = (select oid from pg_database where datname = current_database()))"
            ).fetchone()["n"]
            if waiting:
                break
            time.sleep(0.05)
        assert waiting == 1
        writer.commit()
        dreamer.join(timeout=60)
    assert not dreamer.is_alive() and not errors, errors
    done = result["run"]
    assert (done["status"], done["files_in"], done["files_out"]) == ("done", 2, 1)
    assert done["details"]["skipped"] == [
        {"path": "user/b.md", "revision": 1, "reason": "written meanwhile"}
    ]
    assert content(db, "user/a.md") == "- x\n"
    assert content(db, "user/b.md") == "- y\n- y\n- mine\n"  # the write stands
    assert [r["actor"] for r in revisions(db, "user/b.md")][-1] != "dream-agent"
    # b.md stays due: the next dream tidies what was written
    later = dream(db, now=LATER)
    assert (later["status"], later["files_in"], later["files_out"]) == ("done", 1, 1)
    assert content(db, "user/b.md") == "- y\n- mine\n"


def test_near_duplicates_merge_and_the_revision_keeps_the_old_wording(
    db: psycopg.Connection,
) -> None:
    before = "# Dana\n\n- Dana prefers tea in the morning\n- Has a cat named Miso\n"
    write(db, "user/profile.md", before + "- Dana prefers morning teas now\n")
    run = dream(db, now=LATER)
    assert run["status"] == "done" and run["details"]["files"][0]["lines_removed"] == 1
    assert content(db, "user/profile.md") == (
        "# Dana\n\n- Has a cat named Miso\n- Dana prefers morning teas now\n"
    )
    [old, new] = db.execute(
        "select content, actor from memex.file_revisions where path = 'user/profile.md'"
        " order by revision"
    ).fetchall()
    assert "- Dana prefers tea in the morning\n" in old["content"]  # nothing lost
    assert new["actor"] == "dream-agent"
    db.execute(
        "select memex.restore_revision(%s, %s, 'user/profile.md', 1, %s, 'test-model')",
        (A, U, VEC),
    )
    assert content(db, "user/profile.md") == before + "- Dana prefers morning teas now\n"


def test_a_restored_file_is_left_as_restored(db: psycopg.Connection) -> None:
    write(db, "user/profile.md", "- tea\n- tea\n")
    assert dream(db, now=LATER)["status"] == "done"
    db.execute(
        "select memex.restore_revision(%s, %s, 'user/profile.md', 1, %s, 'test-model')",
        (A, U, VEC),
    )
    run = dream(db, now=LATER)
    assert (run["status"], run["files_touched"]) == ("done", 0)  # read, left as restored
    assert run["details"]["skipped"][0]["path"] == "user/profile.md"
    assert content(db, "user/profile.md") == "- tea\n- tea\n"
    write(db, "user/profile.md", "- tea\n- tea\n- milk\n")  # written again: tidied again
    assert dream(db, now=LATER)["status"] == "done"
    assert content(db, "user/profile.md") == "- tea\n- milk\n"


def test_the_budget_defers_files_to_the_next_run(db: psycopg.Connection) -> None:
    for name in ("a", "b", "c"):
        write(db, f"user/{name}.md", f"- {name}\n- {name}\n")
    db.execute("select memex.set_dream_config('{\"write_budget\": 2}')")
    first = dream(db, now=LATER)
    assert (first["files_in"], first["files_out"]) == (3, 2)
    assert first["details"]["deferred"] == ["user/c.md"]
    assert content(db, "user/c.md") == "- c\n- c\n"
    # still due (last_dreamed_at not set): the next run goes on with what was deferred
    assert db.execute("select last_dreamed_at from memex.tenants").fetchone() == {
        "last_dreamed_at": None
    }
    second = dream(db, now=LATER, budget=5)  # never above write_budget
    assert (second["files_out"], second["details"].get("deferred")) == (1, None)
    assert content(db, "user/c.md") == "- c\n"
    assert dream(db, now=LATER)["status"] == "nothing"
    # a file row inserted directly (a bound role may), with no revision yet
    db.execute(
        "insert into memex.memories (agent_id, user_id, path, content, embedding,"
        " embedding_model) values (%s, %s, 'user/d.md', '- d\n- d\n', %s, 'test-model')",
        (A, U, VEC),
    )
    direct = dream(db, now=LATER)
    assert direct["details"]["files"][0]["read_revision"] == 0
    assert content(db, "user/d.md") == "- d\n"
    assert [r["revision"] for r in revisions(db, "user/d.md")] == [1]
    with pytest.raises(psycopg.Error) as invalid:
        dream(db, budget=0)
    assert invalid.value.sqlstate == "MX422"


def test_dream_due_ticks_within_budget_and_the_switch(db: psycopg.Connection) -> None:
    for user in ("u1", "u2", "u3", "u4"):
        write(db, "user/one.md", "- one\n- one\n", user=user)
        write(db, "user/two.md", "- two\n- two\n", user=user)
    write(db, "user/tidy.md", "tidy\n", user="u0")
    write(db, "user/fresh.md", "- f\n- f\n", user="u5")
    db.execute(
        "update memex.memories set updated_at = now() + interval '2 hours' where user_id = 'u5'"
    )  # written just before the tick: in its grace period
    db.execute('select memex.set_dream_config(\'{"write_budget": 3, "concurrency": 3}\')')

    def tick() -> list[tuple[str, str, int]]:
        rows = db.execute("select * from memex.dream_due(p_now => %s)", (LATER,)).fetchall()
        return [(r["user_id"], r["status"], r["files_out"]) for r in rows]

    # u0 is read and found tidy: a run with no file touched, recorded; u1 takes two
    # files, u2 the last one
    assert tick() == [("u0", "done", 0), ("u1", "done", 2), ("u2", "done", 1)]
    [tidy_run] = db.execute(
        "select files_in, files_touched, details from memex.consolidation_runs where user_id = 'u0'"
    ).fetchall()
    assert (tidy_run["files_in"], tidy_run["files_touched"]) == (1, 0)
    assert tidy_run["details"] == {"reason": "1 file read, nothing to tidy"}
    assert content(db, "user/dream-log.md", user="u0") is None  # no no-op noise
    assert tick() == [("u2", "done", 1), ("u3", "done", 2)]  # u2's deferred file first
    assert tick() == [("u4", "done", 2)]
    before = written(db)
    assert tick() == []  # nothing to do, nothing written
    assert written(db) == before
    assert content(db, "user/fresh.md", user="u5") == "- f\n- f\n"
    write(db, "user/one.md", "- again\n- again\n", user="u1")
    db.execute("select memex.set_dream_config('{\"enabled\": false}')")
    assert tick() == []
    db.execute("select memex.set_dream_config('{\"enabled\": true}')")
    assert tick() == [("u1", "done", 1)]


def test_a_failing_tenant_is_recorded_and_the_tick_goes_on(db: psycopg.Connection) -> None:
    db.execute(
        "create function public.fail_dream() returns trigger language plpgsql as $$"
        " begin if new.user_id = 'broken' and new.actor = 'dream-agent' then"
        " raise exception 'disk on fire'; end if; return new; end $$"
    )
    db.execute(
        "create trigger fail_dream before update on memex.memories"
        " for each row execute function public.fail_dream()"
    )
    for user in ("broken", "ok"):
        write(db, "user/p.md", "- p\n- p\n", user=user)
    runs = db.execute("select * from memex.dream_due(p_now => %s)", (LATER,)).fetchall()
    assert [(r["user_id"], r["status"]) for r in runs] == [("broken", "failed"), ("ok", "done")]
    assert runs[0]["error"] == "disk on fire" and runs[0]["kind"] == "dream"
    assert content(db, "user/p.md", user="broken") == "- p\n- p\n"  # rolled back
    assert content(db, "user/dream-log.md", user="broken") is None
    assert content(db, "user/p.md", user="ok") == "- p\n"
    stored = db.execute(
        "select user_id, status from memex.consolidation_runs order by id"
    ).fetchall()
    assert [(r["user_id"], r["status"]) for r in stored] == [("broken", "failed"), ("ok", "done")]


def test_keys_dream_within_their_scope(db: psycopg.Connection, dsn: str) -> None:
    write(db, "user/p.md", "- p\n- p\n")

    def key(access: str, agent: str) -> tuple[str, str]:
        row = db.execute(
            "select token, id from memex.create_key(p_access => %s, p_agent_id => %s)",
            (access, agent),
        ).fetchone()
        return row["token"], str(row["id"])

    for access, agent in (("read", A), ("write", "someone-else")):
        with psycopg.connect(dsn) as app:
            app.execute("set role memex_app")
            app.execute("select memex._enter(%s)", (key(access, agent)[0],))
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                app.execute("select memex.dream_tenant(%s, %s, p_force => true)", (A, U))
    token, key_id = key("write", A)
    with psycopg.connect(dsn, row_factory=dict_row) as app:
        app.execute("set role memex_app")
        app.execute("select memex._enter(%s)", (token,))
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("select * from memex.dream_due()")  # every tenant: the operator's
        app.rollback()
        app.execute("set role memex_app")
        app.execute("select memex._enter(%s)", (token,))
        run = app.execute("select * from memex.dream_tenant(%s, %s, p_force => true)", (A, U))
        assert run.fetchone()["status"] == "done"
        app.commit()
    last = revisions(db, "user/p.md")[-1]
    assert last["actor"] == "dream-agent" and last["details"]["on_behalf_of"] == f"key:{key_id}"


@pytest.mark.parametrize(
    ("before", "after", "removed", "merged"),
    [
        # a repeated section's body and subsections move under the first occurrence
        (
            "## Work\n\n- a\n\n### Projects\n- p1\n\n## Home\n- h\n\n## work\n- b\n\n"
            "### Projects\n- p2\n",
            "## Work\n\n- a\n- b\n\n### Projects\n- p1\n- p2\n\n## Home\n- h\n",
            0,
            2,
        ),
        # closing #s and spacing do not make another heading; another level does
        ("## Notes ##\n- a\n##   notes\n- b\n", "## Notes ##\n- a\n- b\n", 0, 1),
        ("## A\n- x\n### A\n- y\n", "## A\n- x\n### A\n- y\n", 0, 0),
        # the same heading under different parents stays apart
        ("# Alice\n## Notes\n- x\n# Bob\n## Notes\n- y\n", None, 0, 0),
        # every list marker, case, spacing and trailing punctuation
        ("+ Tea\n1) tea\n2. TEA?\n*  tea\n- tea with milk\n", "+ Tea\n- tea with milk\n", 3, 0),
        # a removed line leaves no gap; the file's last newline is kept (or not)
        ("- x\n\n- a\n\n- a\n\n- y\n", "- x\n\n- a\n\n- y\n", 1, 0),
        ("- a\n\n- a", "- a", 1, 0),
        # code, indented items, rules and table separators are never duplicates
        (
            "```\nx = 1\nx = 1\n```\n~~~\n# not a heading\n# not a heading\n~~~\n- A\n  - done\n"
            "- B\n  - done\n---\n---\n|---|\n|---|\n",
            None,
            0,
            0,
        ),
        # a fence never closed: sections stay where they are (duplicates still go)
        ("## A\n- a\n## B\n## A\n- a\n```\n- a\n", "## A\n- a\n## B\n## A\n```\n- a\n", 1, 0),
        ("nothing to do\n", None, 0, 0),
        # near-duplicates (the lexeme rule condensing uses) merge: the later wording stays
        (
            "- Prefers tea in the morning\n- Works at Acme\n- prefers morning teas\n",
            "- Works at Acme\n- prefers morning teas\n",
            1,
            0,
        ),
        # other facts stay, however alike their words; an exact duplicate keeps the first
        ("- Lives in Berlin\n- Lives in Paris\n- step one\n- step two\n", None, 0, 0),
        ("- Runs on Sundays\n- runs on sundays.\n", "- Runs on Sundays\n", 1, 0),
    ],
)
def test_dream_clean(
    db: psycopg.Connection, before: str, after: str | None, removed: int, merged: int
) -> None:
    row = db.execute("select * from memex._dream_clean(%s)", (before,)).fetchone()
    assert (row["content"], row["lines_removed"], row["headings_merged"]) == (
        after or before,
        removed,
        merged,
    )
    again = db.execute("select * from memex._dream_clean(%s)", (row["content"],)).fetchone()
    assert (again["content"], again["lines_removed"], again["headings_merged"]) == (
        row["content"],
        0,
        0,
    )


def test_the_dream_log_when_full_or_edited(db: psycopg.Connection) -> None:
    entry = "- 10:00 user/f.md: 1 duplicate line removed\n"
    full = "## 2026-01-01\n\n" + entry * (32750 // len(entry))  # no room for another day
    write(db, "user/dream-log.md", full, user="full")
    write(db, "user/p.md", "- p\n- p\n", user="full")
    assert dream(db, user="full", now=LATER)["status"] == "done"
    archives = db.execute(
        "select path, content from memex.memories"
        " where user_id = 'full' and path like 'user/dream-log-%'"
    ).fetchall()
    assert len(archives) == 1 and archives[0]["content"] == full
    assert re.fullmatch(r"user/dream-log-\d{14}\.md", archives[0]["path"])
    assert re.fullmatch(
        r"## \d{4}-\d\d-\d\d\n\n- \d\d:\d\d user/p\.md: 1 duplicate line removed\n",
        content(db, "user/dream-log.md", user="full") or "",
    )
    # today's heading twice (a hand edit): the entry goes at the end
    today = db.execute("select to_char(now() at time zone 'UTC', 'YYYY-MM-DD') as d").fetchone()
    edited = f"## {today['d']}\n\n- a\n\n## {today['d']}\n\n- b\n"
    write(db, "user/dream-log.md", edited, user="edited")
    write(db, "user/p.md", "- p\n- p\n", user="edited")
    assert dream(db, user="edited", now=LATER)["status"] == "done"
    log = content(db, "user/dream-log.md", user="edited") or ""
    assert log.startswith(edited) and log.endswith(" user/p.md: 1 duplicate line removed\n")
    assert log.count("\n") == edited.count("\n") + 1


CONTRADICTED = "# Profile\n\n- Lives in Berlin\n- Moved to Paris in March 2026\n- Tea\n- tea\n"


def test_proposed_edits_resolve_contradictions_in_the_same_revision(
    db: psycopg.Connection,
) -> None:
    write(db, "user/profile.md", CONTRADICTED)
    write(db, "user/work.md", "- Engineer at Acme\n")
    write(db, "user/log.md", "- Lives in Berlin\n")  # a log: never read, so never edited
    plan = db.execute("select * from memex.dream_plan(p_now => %s)", (LATER,)).fetchall()
    assert [(p["agent_id"], p["user_id"]) for p in plan] == [(A, U)]
    assert plan[0]["files"] == [
        {"path": "user/profile.md", "revision": 1, "content": CONTRADICTED, "new": True},
        {"path": "user/work.md", "revision": 1, "content": "- Engineer at Acme\n", "new": True},
    ]
    edits = [
        {
            "path": "user/profile.md",
            "revision": 1,
            "old_text": "- Lives in Berlin\n",
            "new_text": "- Lived in Berlin until March 2026\n",
            "reason": "moved to Paris",
        },
        # refused, and the others still apply: absent text, a stale revision, a log, a
        # file not read, and one the caller refused already
        {"path": "user/profile.md", "revision": 1, "old_text": "Lives in Rome", "new_text": ""},
        {"path": "user/work.md", "revision": 7, "old_text": "Acme", "new_text": "Initech"},
        {"path": "user/log.md", "revision": 1, "old_text": "Berlin", "new_text": "Paris"},
        {"path": "user/other.md", "refused": "not a file it was shown"},
    ]
    run = dream(db, now=LATER, edits=psycopg.types.json.Jsonb(edits))
    assert run["status"] == "done" and (run["files_in"], run["files_out"]) == (2, 1), run
    assert content(db, "user/profile.md") == (
        "# Profile\n\n- Lived in Berlin until March 2026\n- Moved to Paris in March 2026\n- Tea\n"
    )
    assert content(db, "user/work.md") == "- Engineer at Acme\n"
    assert content(db, "user/log.md") == "- Lives in Berlin\n"
    [done] = run["details"]["files"]
    assert done["resolved"] == [
        {
            "old_text": "- Lives in Berlin\n",
            "new_text": "- Lived in Berlin until March 2026\n",
            "reason": "moved to Paris",
        }
    ]
    assert done["lines_removed"] == 1
    refused = {(r["path"], r["reason"]) for r in run["details"]["refused"]}
    assert ("user/work.md", "the file changed since the edit was proposed") in refused
    assert ("user/other.md", "not a file it was shown") in refused
    assert ("user/log.md", "not a file dreams edit (a log, restored, or no such file)") in refused
    assert any(p == "user/profile.md" and "old_text" in r for p, r in refused), refused
    assert len(refused) == 4
    # one revision, by dream-agent, that says what it did; the log says it too
    rev = revisions(db, "user/profile.md")
    assert [(r["revision"], r["actor"]) for r in rev][1:] == [(2, "dream-agent")]
    assert rev[1]["details"]["dream"]["contradictions_resolved"] == 1
    log = content(db, "user/dream-log.md")
    assert log is not None
    assert "user/profile.md: 1 contradiction resolved, 1 duplicate line removed" in log


def test_the_dream_plan(db: psycopg.Connection) -> None:
    write(db, "user/a.md", "- a\n", user="u1")
    write(db, "user/b.md", "- b\n", user="u2")
    dream(db, user="u2", now=LATER)  # u2 dreamed: its file is not new any more
    write(db, "user/c.md", "- c\n", user="u2")
    restored = write(db, "user/r.md", "- r1\n", user="u3")
    write(db, "user/r.md", "- r2\n", user="u3")
    db.execute(
        "select memex.restore_revision(%s, 'u3', 'user/r.md', %s, %s, 'test-model')",
        (A, restored["revision"], VEC),
    )
    due = db.execute("select * from memex.dream_plan(p_now => %s)", (LATER,)).fetchall()
    # every file is shown, so an old statement a new one contradicts is seen; u3's one
    # file is left as restored, so u3 is not shown
    assert {r["user_id"]: [(f["path"], f["new"]) for f in r["files"]] for r in due} == {
        "u1": [("user/a.md", True)],
        "u2": [("user/b.md", False), ("user/c.md", True)],
    }
    one = db.execute(
        "select * from memex.dream_plan(p_agent_id => %s, p_user_id => 'u2', p_force => true)",
        (A,),
    ).fetchall()
    assert [(f["path"], f["new"]) for f in one[0]["files"]] == [
        ("user/b.md", True),
        ("user/c.md", True),
    ]
    before = written(db)
    db.execute("select memex.set_dream_config('{\"enabled\": false}')")
    assert db.execute("select * from memex.dream_plan(p_now => %s)", (LATER,)).fetchall() == []
    db.execute("select memex.set_dream_config('{\"enabled\": true}')")
    assert written(db) == before  # a plan writes nothing
    with pytest.raises(psycopg.Error) as invalid:
        db.execute("select * from memex.dream_plan(p_agent_id => %s)", (A,))
    assert (invalid.value.sqlstate, invalid.value.diag.column_name) == ("MX422", "user_id")


@pytest.mark.parametrize(
    "edits",
    ['{"path": "user/p.md"}', "[1]", '[{"old_text": "x"}]', '[{"path": 3}]'],
)
def test_malformed_edits_are_refused_before_anything_runs(
    db: psycopg.Connection, edits: str
) -> None:
    write(db, "user/p.md", "- p\n- p\n")
    before = written(db)
    for sql in (
        "select * from memex.dream_tenant(%(a)s, %(u)s, p_now => %(now)s, p_edits => %(e)s)",
        "select * from memex.dream_due(p_now => %(now)s, p_edits => %(e)s)",
    ):
        with pytest.raises(psycopg.Error) as error:
            db.execute(sql, {"a": A, "u": U, "now": LATER, "e": edits})
        assert (error.value.sqlstate, error.value.diag.column_name) == ("MX422", "edits")
        db.rollback()
    assert written(db) == before


def test_dream_due_hands_each_tenant_its_own_edits(db: psycopg.Connection) -> None:
    for user in ("u1", "u2"):
        write(db, "user/p.md", "- Lives in Berlin\n- Moved to Paris\n", user=user)
    edit = {"path": "user/p.md", "revision": 1, "old_text": "- Lives in Berlin\n", "new_text": ""}
    runs = db.execute(
        "select * from memex.dream_due(p_now => %s, p_edits => %s)",
        (LATER, psycopg.types.json.Jsonb([{"agent_id": A, "user_id": "u2", **edit}])),
    ).fetchall()
    # u1 read and left as it was (no edit of its own, nothing to tidy)
    assert [(r["user_id"], r["files_touched"]) for r in runs] == [("u1", 0), ("u2", 1)]
    assert content(db, "user/p.md", user="u1") == "- Lives in Berlin\n- Moved to Paris\n"
    assert content(db, "user/p.md", user="u2") == "- Moved to Paris\n"


def test_an_edit_may_correct_an_old_file_that_a_new_one_contradicts(
    db: psycopg.Connection,
) -> None:
    write(db, "user/profile.md", "- Lives in Berlin\n- Vegetarian\n")
    dream(db, now=LATER)  # read once: not new any more
    write(db, "user/travel.md", "- Moved to Lisbon in May\n")
    [plan] = db.execute("select * from memex.dream_plan(p_now => %s)", (LATER,)).fetchall()
    assert [(f["path"], f["new"]) for f in plan["files"]] == [
        ("user/profile.md", False),
        ("user/travel.md", True),
    ]
    edit = {
        "path": "user/profile.md",
        "revision": 1,
        "old_text": "- Lives in Berlin\n",
        "new_text": "- Lived in Berlin until May\n",
    }
    run = dream(db, now=LATER, edits=psycopg.types.json.Jsonb([edit]))
    assert run["status"] == "done" and run["files_in"] == 2, run
    assert content(db, "user/profile.md") == "- Lived in Berlin until May\n- Vegetarian\n"


def test_a_dream_tick_yields_to_a_store_in_progress(db: psycopg.Connection, dsn: str) -> None:
    """A store into the tenant, not committed yet, holds the tenant's counters, which a
    rewrite that changes a file's length updates: the tick waits for them at most 200 ms,
    then skips the tenant (no failed run recorded: the next tick dreams it)."""
    write(db, "user/one.md", "- one\n- one\n")
    db.commit()
    with psycopg.connect(dsn) as writer:
        register_vector(writer)
        writer.execute(
            "select memex.store(%s, %s, 'written just now', %s, 'test-model')", (A, U, VEC)
        )
        db.execute("set statement_timeout = '10s'")
        started = time.monotonic()
        rows = db.execute("select * from memex.dream_due(p_now => %s)", (LATER,)).fetchall()
        waited = time.monotonic() - started
        assert rows == [] and waited < 5, (rows, waited)
        db.commit()
        writer.commit()
    assert content(db, "user/one.md") == "- one\n- one\n"
    assert db.execute("select count(*) as n from memex.consolidation_runs").fetchone() == {"n": 0}
    rows = db.execute("select * from memex.dream_due(p_now => %s)", (LATER,)).fetchall()
    assert [(r["status"], r["files_out"]) for r in rows] == [("done", 1)]
