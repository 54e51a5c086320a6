"""The default request (hybrid with context, no options) on a tenant in the ANN index:
latency and recall@10 against the exact path, for the functions as migrated ("now") and,
with --baseline-sql, older sql/ function files ("before"), in the same run.

`bench/scale_bench.py` times vector-only requests; this one sends what a client that
sends only its query gets: the query's embedding and its text. One tenant of --rows
memories of synthetic text (a Zipf-like vocabulary), clustered vectors, dates spread over
two years and some importance, moved into the HNSW index the way a DBA does it
(memex.index_tenant before the import, memex.configure_vector_index after it). Each
query is a memory's vector plus as much noise again, and three of its words plus one
random word; "default request, common words" sends the same vectors with four words each
drawn as a word of a random memory (Zipf-like: "w9 w108 w0 w321", as a user's "how was
your day" is), each held by more than the text step's budget of the tenant.

Recall@10 is measured against the same request on the exact path (the tenant taken out
of the ANN index for the while, tenants.ann = false), which scores every memory. The two
function versions are swapped in between rounds on one database (the same data and
index), each round timing every query once; "vector, alpha 1" (the ANN index alone, no
text, no recency) is timed in the same rounds as the floor any ANN ranking pays.

    git show main:sql/memories/006_bm25_held.sql main:sql/memories/040_text_rows.sql \\
        main:sql/memories/041_ann_neighbour_rows.sql \\
        main:sql/memories/041_candidates_ann.sql \\
        main:sql/memories/042_search.sql > /tmp/before.sql
    python bench/ann_default_bench.py --baseline-sql /tmp/before.sql

memex._held_bm25 (006_bm25_held.sql, the text scores) and memex._text_rows
(040_text_rows.sql, the text step's read) are replaced with them, kept with their owners
(`create or replace`); a baseline file without one runs with this checkout's. "now"
also installs memex._ann_neighbour_rows (041_ann_neighbour_rows.sql, the neighbour
probes' read), which an older 041_candidates_ann.sql does not call.
The functions are installed as migrated: owned by the role that owned them (memex_owner),
so memex.search (a security definer) runs under the tables' row-level security as the
service's calls do. A file executed by the superuser would own them and
bypass it, and the text step could then use the GIN index, which row-level security
forbids (`@@` is not leakproof): runs before 2026-12-06 17:30 UTC measured that, not what
the service runs (bench/RESULTS.md, "The default request under row-level security").

The baseline file may also redefine indexes of memex.memories (an older revision's
`drop index ...; create index ...`): the migrated definitions are put back before each
"now" round, so an index change is compared in the same run as a function change.
"""

from __future__ import annotations

import argparse
import contextlib
import pydoc_data.topics as pydoc_topics
import re
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from content_size_bench import backend_cpu
from harness import (
    Latency,
    create_database,
    embedded_server,
    log,
    print_header,
    run_main,
    write_json,
)
from machine import machine_facts
from pgvector import HalfVector
from pgvector.psycopg import register_vector
from psycopg.conninfo import make_conninfo

import memexdb
from memexdb.embedded.server import EmbeddedPostgres

REPO = Path(__file__).resolve().parents[1]
FUNCTIONS = (
    "memories/006_bm25_held.sql",
    "memories/040_text_rows.sql",
    "memories/041_ann_neighbour_rows.sql",
    "memories/041_candidates_ann.sql",
    "memories/042_search.sql",
)
NOW = datetime(2026, 6, 1, tzinfo=UTC)
VOCABULARY = 5000
WORDS = 30  # per memory
COPY = (
    "copy memex.memories (agent_id, user_id, content, embedding, embedding_model, importance,"
    " created_at) from stdin (format binary)"
)
DEFAULT_SEARCH = (
    "select id from memex.search(p_agent_id => 'bench', p_user_id => 'u',"
    " p_query_embedding => %s, p_top_k => 10, p_query_text => %s, p_now => %s)"
)
VECTOR_SEARCH = (
    "select id from memex.search(p_agent_id => 'bench', p_user_id => 'u',"
    " p_query_embedding => %s, p_top_k => 10, p_alpha => 1, p_now => %s)"
)


def unit(v: np.ndarray) -> np.ndarray:
    result: np.ndarray = (v / np.linalg.norm(v, axis=-1, keepdims=True)).astype(np.float32)
    return result


def reference_sentences() -> list[str]:
    """The sentences of the Python language reference's topics (pydoc_data.topics, which
    ships with CPython): real English prose of 20-300 characters."""
    text = re.sub(r"\s+", " ", " ".join(pydoc_topics.topics.values()))
    return [
        s
        for s in (s.strip() for s in re.split(r"(?<=[.!?])\s+", text))
        if 20 <= len(s) <= 300 and re.search(r"[a-z]{4}", s)
    ]


def texts_of(rng: np.random.Generator, text: str, rows: int) -> tuple[list[str], list[list[str]]]:
    """Each memory's content and its words: --text zipf draws WORDS words from a Zipf-like
    vocabulary; --text reference joins two random sentences of the language reference."""
    if text == "zipf":
        ranks = np.arange(VOCABULARY)
        p = 1 / (ranks + 10.0)
        words = rng.choice(VOCABULARY, size=(rows, WORDS), p=p / p.sum())
        tokens = [[f"w{w}" for w in row] for row in words]
        return [" ".join(t) for t in tokens], tokens
    sentences = reference_sentences()
    pairs = rng.integers(len(sentences), size=(rows, 2))
    contents = [f"{sentences[a]} {sentences[b]}" for a, b in pairs]
    return contents, [texts_of_words(c) for c in contents]


def dataset(
    rng: np.random.Generator, rows: int, queries: int, text: str = "zipf"
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Contents, vectors, importance, ages (s), query vectors and query texts."""
    contents, words = texts_of(rng, text, rows)
    vocabulary = (
        [f"w{k}" for k in range(VOCABULARY)]
        if text == "zipf"
        else sorted({w for ws in words[:10_000] for w in ws})
    )
    centroids = unit(rng.standard_normal((max(rows // 50, 1), 384)))
    # a memory's cosine with its cluster's centre is ~0.7, with its cluster-mates ~0.5
    vectors = unit(
        centroids[rng.integers(len(centroids), size=rows)] + unit(rng.standard_normal((rows, 384)))
    )
    importance = np.where(rng.random(rows) < 0.2, rng.uniform(0.5, 1.5, rows), 1.0)
    ages = rng.uniform(0, 730 * 86400, rows)
    picks = rng.integers(rows, size=queries)
    asked = unit(vectors[picks] + unit(rng.standard_normal((queries, 384))))
    texts = [
        " ".join(
            [str(w) for w in rng.choice(words[i], 3, replace=False)]
            + [vocabulary[rng.integers(len(vocabulary))]]
        )
        for i in picks
    ]
    return contents, vectors, importance, ages, asked, texts


def common_texts(seed: int, contents: Sequence[str], text: str, queries: int) -> list[str]:
    """Query texts of four words, each a word of a random memory (drawn as often as the
    tenant holds it: the common words of a Zipf-like vocabulary), from a generator of
    their own (the tenant and the other queries stay as they were)."""
    rng = np.random.default_rng([seed, 1])
    texts = []
    for _ in range(queries):
        words = []
        for i in rng.integers(len(contents), size=4):
            tokens = contents[i].split() if text == "zipf" else texts_of_words(contents[i])
            words.append(tokens[rng.integers(len(tokens))])
        texts.append(" ".join(words))
    return texts


def texts_of_words(content: str) -> list[str]:
    """The words of a prose memory, as texts_of takes them."""
    return re.findall(r"[a-z]{3,}", content.lower())


def load(
    conn: psycopg.Connection[Any],
    contents: list[str],
    vectors: np.ndarray,
    importance: np.ndarray,
    ages: np.ndarray,
) -> float:
    """Import the tenant straight into the ANN index, then build HNSW; seconds taken."""
    started = time.perf_counter()
    conn.execute("select memex.configure_vector_index('none')")
    conn.execute("select memex.index_tenant('bench', 'u')")
    # the column's type: vector before revision 0037, halfvec since (binary COPY wants it)
    row = conn.execute(
        "select t.typname from pg_attribute a join pg_type t on t.oid = a.atttypid"
        " where a.attrelid = 'memex.memories'::regclass and a.attname = 'embedding'"
    ).fetchone()
    kind = str(row[0]) if row else "vector"
    with conn.cursor() as cur, cur.copy(COPY) as copy:
        copy.set_types(["text", "text", "text", kind, "text", "float8", "timestamptz"])
        for content, vector, imp, age in zip(contents, vectors, importance, ages, strict=True):
            copy.write_row(
                (
                    "bench",
                    "u",
                    content,
                    HalfVector(vector) if kind == "halfvec" else vector,
                    "synthetic",
                    float(imp),
                    NOW - timedelta(seconds=float(age)),
                )
            )
    conn.execute("vacuum (analyze) memex.memories")
    conn.execute("set statement_timeout = 0")
    conn.execute("select memex.configure_vector_index('hnsw')")
    conn.execute("checkpoint")
    return time.perf_counter() - started


def relation_sizes(conn: psycopg.Connection[Any]) -> list[tuple[str, int]]:
    """Bytes of memex.memories' heap, its TOAST and each of its indexes, and of term_stats
    with its indexes (what the tenant costs on disk and, hot, in memory)."""
    rows = conn.execute(
        "select 'heap', pg_relation_size('memex.memories')"
        " union all select 'toast (with its index)', coalesce(pg_total_relation_size("
        "  nullif((select reltoastrelid from pg_class"
        "          where oid = 'memex.memories'::regclass), 0)), 0)"
        " union all (select i.indexrelid::regclass::text, pg_relation_size(i.indexrelid)"
        "  from pg_index i where i.indrelid = 'memex.memories'::regclass order by 1)"
        " union all select 'term_stats (with its indexes)',"
        "  pg_total_relation_size('memex.term_stats')"
    ).fetchall()
    return [(str(name), int(size)) for name, size in rows]


def function_owners(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """The owner of each of the two functions as migrated, by name."""
    rows = conn.execute(
        "select p.proname, p.proowner::regrole::text from pg_proc p"
        " where p.pronamespace = 'memex'::regnamespace"
        " and p.proname in ('_candidates_ann', 'search')"
    ).fetchall()
    return {str(name): str(owner) for name, owner in rows}


def drop_functions(conn: psycopg.Connection[Any]) -> None:
    """Every version of the two functions, so that a file's overloads never meet another's."""
    for name in ("_candidates_ann", "search"):
        for (signature,) in conn.execute(
            "select p.oid::regprocedure::text from pg_proc p"
            " where p.pronamespace = 'memex'::regnamespace and p.proname = %s",
            (name,),
        ).fetchall():
            conn.execute(f"drop function {signature}")


def memories_indexes(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """The indexes of memex.memories, name to definition."""
    rows = conn.execute(
        "select indexname, indexdef from pg_indexes"
        " where schemaname = 'memex' and tablename = 'memories'"
    ).fetchall()
    return {str(name): str(definition) for name, definition in rows}


def install(dsn: str, sql: str, indexes: dict[str, str], owners: dict[str, str]) -> None:
    """Restore the migrated indexes of memex.memories where a baseline redefined them,
    then replace the two functions and run the rest of `sql` (on a connection of its own:
    a file is many statements, which a prepared statement cannot hold), and give the
    functions back to their migrated owners (memex.search is a security definer: owned
    by the superuser who runs this, it would skip row-level security)."""
    with psycopg.connect(dsn) as conn:
        current = memories_indexes(conn)
        for name, definition in indexes.items():
            if current.get(name) != definition:
                conn.execute(f"drop index if exists memex.{name}")
                conn.execute(definition.encode())
        drop_functions(conn)
        conn.execute(sql.encode())
        for name, owner in owners.items():
            for (signature,) in conn.execute(
                "select p.oid::regprocedure::text from pg_proc p"
                " where p.pronamespace = 'memex'::regnamespace and p.proname = %s",
                (name,),
            ).fetchall():
                conn.execute(f"alter function {signature} owner to {owner}")


def top_ids(conn: psycopg.Connection[Any], sql: str, params: tuple[Any, ...]) -> list[str]:
    return [str(r[0]) for r in conn.execute(sql, params).fetchall()]


@contextlib.contextmanager
def server_at(directory: Path | None) -> Iterator[EmbeddedPostgres]:
    """A fresh, removed server; or, with --server-dir, one whose databases are kept for the
    next run (building 200,000 memories and their HNSW index takes long on 2 cores)."""
    if directory is None:
        with embedded_server("ann-default") as server:
            yield server
        return
    server = EmbeddedPostgres(directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def tenant_database(admin_dsn: str, name: str) -> tuple[str, bool]:
    """(DSN, whether it is new) of database `name`: migrated, so a kept one has the SQL
    functions of this checkout."""
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        kept = conn.execute("select 1 from pg_database where datname = %s", (name,)).fetchone()
    if not kept:
        return create_database(admin_dsn, name), True
    dsn = make_conninfo(admin_dsn, dbname=name)
    memexdb.migrate(dsn)
    return dsn, False


def store_throughput(
    conn: psycopg.Connection[Any], rng: np.random.Generator, rounds: int
) -> dict[str, dict[str, float]]:
    """Memories a second stored into the big tenant by memex.store_many (batches of 100)
    and memex.store (one a call), "before" as the store path was before issue 26 (the
    term-statistics triggers off, no memories_tenant_key_recent_idx) and "now", alternated
    round by round; each round's memories are deleted again (in the same state)."""
    triggers = ("memories_terms_insert", "memories_terms_delete")
    key_index = conn.execute(
        "select replace(indexdef, 'CREATE INDEX', 'CREATE INDEX IF NOT EXISTS') from pg_indexes"
        " where schemaname = 'memex' and indexname = 'memories_tenant_key_recent_idx'"
    ).fetchone()
    vectors = unit(rng.standard_normal((100, 384)))
    contents = [f"stored memory {i} about w{i % 97} and w{i % 13}" for i in range(100)]
    rates: dict[str, dict[str, list[float]]] = {
        v: {"batch of 100": [], "single": []} for v in ("before", "now")
    }
    for _ in range(rounds):
        for version in ("before", "now"):
            state = "enable" if version == "now" else "disable"
            for trigger in triggers:
                conn.execute(f"alter table memex.memories {state} trigger {trigger}")
            if key_index and version == "before":
                conn.execute("drop index memex.memories_tenant_key_recent_idx")
            elif key_index:
                conn.execute(key_index[0])
            started = time.perf_counter()
            for _ in range(3):
                conn.execute(
                    "select count(*) from memex.store_many(%s, %s, %s, %s, 'synthetic')",
                    (["bench"] * 100, ["u"] * 100, contents, list(vectors)),
                )
            rates[version]["batch of 100"].append(300 / (time.perf_counter() - started))
            started = time.perf_counter()
            for i in range(100):
                conn.execute(
                    "select id from memex.store('bench', 'u', %s, %s, 'synthetic')",
                    (contents[i], vectors[i]),
                )
            rates[version]["single"].append(100 / (time.perf_counter() - started))
            conn.execute("delete from memex.memories where content like 'stored memory %%'")
    conn.execute("alter table memex.memories enable trigger memories_terms_insert")
    conn.execute("alter table memex.memories enable trigger memories_terms_delete")
    if key_index:
        conn.execute(key_index[0])
    return {v: {k: float(np.median(x)) for k, x in r.items()} for v, r in rates.items()}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000, help="memories of the tenant")
    parser.add_argument("--queries", type=int, default=60, help="queries per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-sql", type=Path, help="older 006, 040, 041 and 042 in one file")
    parser.add_argument("--text", choices=("zipf", "reference"), default="zipf")
    parser.add_argument("--server-dir", type=Path, help="keep the tenant here for reuse")
    parser.add_argument("--store-rounds", type=int, default=0, help="also time stores")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--database", help="the tenant's database (default ann_TEXT_ROWS_SEED, built if missing)"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "out")
    args = parser.parse_args(argv)
    facts = machine_facts()
    command = print_header(facts)
    rng = np.random.default_rng(args.seed)
    contents, vectors, importance, ages, asked, texts = dataset(
        rng, args.rows, args.queries, args.text
    )
    versions = {"now": "\n".join((REPO / "sql" / f).read_text() for f in FUNCTIONS)}
    if args.baseline_sql:
        versions = {"before": args.baseline_sql.read_text(), **versions}
    common = common_texts(args.seed, contents, args.text, args.queries)
    cases = {
        "default request (no options)": DEFAULT_SEARCH,
        "default request, common words": DEFAULT_SEARCH,
        "vector, alpha 1": VECTOR_SEARCH,
        "vector, alpha 0.7": VECTOR_SEARCH.replace("p_alpha => 1", "p_alpha => 0.7"),
    }

    def params(case: str, i: int) -> tuple[Any, ...]:
        if case.startswith("vector"):
            return (asked[i], NOW)
        if case.endswith("common words"):
            return (asked[i], common[i], NOW)
        return (asked[i], texts[i], NOW)

    with server_at(args.server_dir) as server:
        dsn, new = tenant_database(
            server.dsn, args.database or f"ann_{args.text}_{args.rows}_{args.seed}"
        )
        with psycopg.connect(dsn, autocommit=True, prepare_threshold=0) as conn:
            register_vector(conn)
            if new:
                log(f"loading {args.rows:,} memories")
                seconds_taken = load(conn, contents, vectors, importance, ages)
                log(f"loaded and indexed in {seconds_taken:.0f} s")
            migrated_indexes = memories_indexes(conn)
            owners = function_owners(conn)
            memories = int(conn.execute("select count(*) from memex.memories").fetchone()[0])
            sizes = relation_sizes(conn)
            conn.execute("update memex.tenants set ann = false where agent_id = 'bench'")
            exact = {
                case: [top_ids(conn, sql, params(case, i)) for i in range(args.queries)]
                for case, sql in cases.items()
            }
            conn.execute("update memex.tenants set ann = true where agent_id = 'bench'")
            log("exact rankings taken")
            cpu_box = backend_cpu(conn)
            seconds: dict[str, dict[str, list[float]]] = {
                c: {v: [] for v in versions} for c in cases
            }
            cpu: dict[str, dict[str, list[float]]] = {c: {v: [] for v in versions} for c in cases}
            recall: dict[str, dict[str, list[float]]] = {
                c: {v: [] for v in versions} for c in cases
            }
            # One untimed pass of every query per version first: a server just started
            # has its indexes only in the OS page cache, and without this pass the
            # version timed first in round 1 paid for reading them (an A/A run measured
            # the first version ~15 % slower, bench/RESULTS.md "Big tenants").
            for sql_text in versions.values():
                install(dsn, sql_text, migrated_indexes, owners)
                for case, sql in cases.items():
                    for i in range(args.queries):
                        top_ids(conn, sql, params(case, i))
            log("warmed")
            for r in range(args.rounds):
                for version, sql_text in versions.items():
                    install(dsn, sql_text, migrated_indexes, owners)
                    for case, sql in cases.items():
                        top_ids(conn, sql, params(case, 0))  # plan
                        for i in range(args.queries):
                            cpu_box.clear()
                            started = time.perf_counter()
                            got = top_ids(conn, sql, params(case, i))
                            seconds[case][version].append(time.perf_counter() - started)
                            cpu[case][version].append(sum(cpu_box))
                            if r == 0:
                                recall[case][version].append(
                                    len(set(got) & set(exact[case][i])) / 10
                                )
                log(f"round {r + 1} of {args.rounds} done")
            install(dsn, versions["now"], migrated_indexes, owners)
            conn.execute("set log_statement_stats = off")
            stores = store_throughput(conn, rng, args.store_rounds) if args.store_rounds else {}
    print()
    print(f"| object | MB | bytes per memory ({memories:,} memories) |")
    print("|---|---:|---:|")
    for name, size in sizes:
        print(f"| {name} | {size / 1e6:.1f} | {size / memories:,.0f} |")
    total = sum(size for _, size in sizes)
    print(f"| **total** | **{total / 1e6:.1f}** | **{total / memories:,.0f}** |")
    print()
    print("| search | functions | n | p50 ms | p99 ms | CPU p50 ms | recall@10 vs exact |")
    print("|---|---|---:|---:|---:|---:|---:|")
    report: dict[str, Any] = {
        "command": command,
        "machine": facts,
        "args": vars(args)
        | {
            "baseline_sql": str(args.baseline_sql),
            "out": str(args.out),
            "server_dir": str(args.server_dir),
        },
        "results": {},
        "stores_per_second": stores,
        "sizes": {"memories": memories, "bytes": dict(sizes)},
    }
    for case in cases:
        for version in versions:
            lat = Latency.of(seconds[case][version])
            cpu_ms = float(np.median(cpu[case][version])) * 1000
            rec = float(np.mean(recall[case][version]))
            print(
                f"| {case} | {version} | {lat.n} | {lat.p50_ms:.2f} | {lat.p99_ms:.2f}"
                f" | {cpu_ms:.2f} | {rec:.3f} |"
            )
            report["results"][f"{case} / {version}"] = lat.__dict__ | {
                "cpu_p50_ms": cpu_ms,
                "recall_at_10": rec,
            }
    if stores:
        print()
        print("| store into the tenant | store path | memories/s (median of rounds) |")
        print("|---|---|---:|")
        for version, rates in stores.items():
            for kind, rate in rates.items():
                print(f"| {kind} | {version} | {rate:.0f} |")
    log(f"wrote {write_json(args.out, 'ann_default', report)}")
    return 0


if __name__ == "__main__":
    run_main(main)
