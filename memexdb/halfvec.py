"""Convert memex.memories.embedding to halfvec online (`memexdb convert-embeddings`).

Revision 0037 stores embeddings at half precision. On a table of at most
memex.halfvec_rewrite_max_rows rows (default 10,000) it changes the column's type in
place, a rewrite under an access exclusive lock that lasts a second or two; a bigger table
would stay locked for minutes (the table and every index rewritten, the HNSW index built
again), so the revision refuses it until this has run. Here, on the database before 0037,
while the service keeps serving from the old column:

1. a nullable column `embedding_half halfvec(N)` (catalog only) and a trigger that fills it
   from `embedding` on every insert and on every update of `embedding`;
2. a backfill in batches of the primary key's order, each its own transaction;
3. each ANN index on `embedding` built again on `embedding_half` with the halfvec operator
   class, `CREATE INDEX CONCURRENTLY`, named `<name>_half`;
4. a check `embedding_half is not null` added NOT VALID and validated (no lock on writes).

Then `memexdb migrate` runs 0037, which swaps the columns in catalog changes only. Every
step can run again: a run stopped anywhere resumes (an index a failed concurrent build left
invalid is built again). Statements that take a lock wait at most `lock_timeout` for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import sql

CHECK = "memories_embedding_half_filled"
TRIGGER = "memories_embedding_half_fill"

FILL_FUNCTION = """
create or replace function memex._embedding_half_fill()
returns trigger
language plpgsql volatile set search_path = pg_catalog, public, pg_temp
as $$
begin
    new.embedding_half := new.embedding;
    return new;
end
$$
"""

ANN_INDEXES = """
select c.relname::text, pg_get_indexdef(i.indexrelid)
from pg_index i
join pg_class c on c.oid = i.indexrelid
join pg_am a on a.oid = c.relam
join pg_attribute att on att.attrelid = i.indrelid and att.attnum = i.indkey[0]
where i.indrelid = 'memex.memories'::regclass and a.amname in ('hnsw', 'ivfflat')
  and att.attname = %s
order by 1
"""


@dataclass(frozen=True, slots=True)
class Conversion:
    """What a run did: rows it filled, the indexes it built, whether the column was
    already halfvec (nothing to do)."""

    already_halfvec: bool
    rows_filled: int
    indexes_built: tuple[str, ...]


def _column(conn: psycopg.Connection[Any], name: str) -> tuple[str, int] | None:
    row = conn.execute(
        "select t.typname::text, a.atttypmod from pg_attribute a"
        " join pg_type t on t.oid = a.atttypid"
        " where a.attrelid = 'memex.memories'::regclass and a.attname = %s"
        " and not a.attisdropped",
        (name,),
    ).fetchone()
    return (str(row[0]), int(row[1])) if row else None


def half_index_definition(definition: str, name: str) -> str:
    """`definition` (pg_get_indexdef of an ANN index on embedding) for its halfvec twin,
    built concurrently as `<name>_half` on embedding_half."""
    head, sep, rest = definition.partition(" USING ")
    if not sep or not head.startswith("CREATE INDEX "):
        raise ValueError(f"not an index definition: {definition}")
    body = rest.replace("(embedding ", "(embedding_half ", 1)
    for ops in ("cosine", "l2", "ip", "l1"):
        body = body.replace(f"vector_{ops}_ops", f"halfvec_{ops}_ops")
    table = head.split(" ON ", 1)[1]
    quoted = sql.Identifier(f"{name}_half").as_string()
    return f"CREATE INDEX CONCURRENTLY {quoted} ON {table} USING {body}"


def convert_embeddings(
    dsn: str,
    *,
    batch_size: int = 2000,
    lock_timeout: str = "5s",
    progress: Callable[[str], None] | None = None,
) -> Conversion:
    """Steps 1 to 4 above on the database at `dsn` (its owner's: the migrator's)."""
    say = progress or (lambda _message: None)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("select set_config('lock_timeout', %s, false)", (lock_timeout,))
        column = _column(conn, "embedding")
        if column is None:
            raise RuntimeError("memex.memories has no embedding column: not migrated")
        kind, dims = column
        if kind == "halfvec":
            return Conversion(already_halfvec=True, rows_filled=0, indexes_built=())
        conn.execute(
            sql.SQL(
                "alter table memex.memories add column if not exists embedding_half"
                " public.halfvec({})"
            ).format(sql.Literal(dims))
        )
        conn.execute(FILL_FUNCTION)
        conn.execute(
            f"create or replace trigger {TRIGGER}"
            " before insert or update of embedding on memex.memories"
            " for each row execute function memex._embedding_half_fill()"
        )
        say("column embedding_half and its trigger in place; filling")

        filled = 0
        last: Any = None
        while True:
            row = conn.execute(
                "select max(id::text)::uuid, count(*) from (select id from memex.memories"
                " where %s::uuid is null or id > %s::uuid order by id limit %s) b",
                (last, last, batch_size),
            ).fetchone()
            if row is None or not row[1]:
                break
            upto = row[0]
            cur = conn.execute(
                "update memex.memories set embedding_half = embedding"
                " where (%s::uuid is null or id > %s::uuid) and id <= %s"
                " and embedding_half is null",
                (last, last, upto),
            )
            filled += max(cur.rowcount, 0)
            last = upto
            if filled and filled % (batch_size * 25) < batch_size:
                say(f"{filled:,} rows filled")
        # rows no batch reached (ids below one already passed, e.g. a client-chosen id)
        cur = conn.execute(
            "update memex.memories set embedding_half = embedding where embedding_half is null"
        )
        filled += max(cur.rowcount, 0)
        say(f"{filled:,} rows filled; vacuum")
        conn.execute("vacuum (analyze) memex.memories")

        built = []
        for name, definition in conn.execute(ANN_INDEXES, ("embedding",)).fetchall():
            half = f"{name}_half"
            state = conn.execute(
                "select i.indisvalid from pg_index i join pg_class c on c.oid = i.indexrelid"
                " where c.relname = %s and c.relnamespace = 'memex'::regnamespace",
                (half,),
            ).fetchone()
            if state is not None and state[0]:
                continue
            if state is not None:  # a concurrent build that failed leaves it invalid
                conn.execute(
                    sql.SQL("drop index concurrently memex.{}").format(sql.Identifier(half))
                )
            say(f"building {half}")
            conn.execute("select set_config('lock_timeout', '0', false)")
            conn.execute(half_index_definition(definition, name).encode())
            conn.execute("select set_config('lock_timeout', %s, false)", (lock_timeout,))
            built.append(half)

        exists = conn.execute(
            "select convalidated from pg_constraint"
            " where conrelid = 'memex.memories'::regclass and conname = %s",
            (CHECK,),
        ).fetchone()
        if exists is None:
            conn.execute(
                f"alter table memex.memories add constraint {CHECK}"
                " check (embedding_half is not null) not valid"
            )
        if exists is None or not exists[0]:
            conn.execute(f"alter table memex.memories validate constraint {CHECK}")
        say("done: `memexdb migrate` now swaps the columns (revision 0037)")
        return Conversion(already_halfvec=False, rows_filled=filled, indexes_built=tuple(built))
