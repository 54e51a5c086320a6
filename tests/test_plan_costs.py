"""What a request plans and evaluates per statement (issue 36's latency targets, issue 39):
memex._candidates_ann's statement has one cached generic plan, and a tenant in the ANN
index without supersession links runs none of its supersession steps; the steps whose plan
depends on the tenant's size are planned per call, with the filters as constants; and
row-level security reads the service's caller inline (the policies' InitPlans evaluate the
expression, not a PL/pgSQL call with its own settings, several times a statement)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg

from tests.test_supersession_ranking import NEW, NOW, OLD, load, search, to_ann
from tests.test_vector_index import index_tenant


@contextmanager
def logged_plans(conn: psycopg.Connection, *settings: str) -> Iterator[list[str]]:
    """The plans of every statement (nested ones too) run inside the block, in one
    transaction: auto_explain sends them to this session as LOG messages, collected into
    the list yielded. `settings` are more `auto_explain.x = y` lines for the block."""
    plans: list[str] = []

    def collect(diag: psycopg.errors.Diagnostic) -> None:
        if "plan:" in (diag.message_primary or ""):
            plans.append(diag.message_primary or "")

    conn.add_notice_handler(collect)
    try:
        with conn.transaction():
            conn.execute("load 'auto_explain'")
            conn.execute("set local auto_explain.log_min_duration = 0")
            conn.execute("set local auto_explain.log_nested_statements = on")
            for setting in settings:
                conn.execute(f"set local auto_explain.{setting}")
            conn.execute("set local client_min_messages = log")
            yield plans
    finally:
        conn.remove_notice_handler(collect)


def nested_plans(
    conn: psycopg.Connection, agent: str, fmt: str = "text", analyze: bool = False, **options: Any
) -> str:
    """The plans of every statement the default request on `agent` (with the options
    given) runs (auto_explain of nested statements in format `fmt`, sent to this session
    as LOG messages; with `analyze`, as run: nodes not run say "never executed"), as one
    text."""
    with logged_plans(
        conn,
        f"log_format = {fmt}",
        f"log_analyze = {'on' if analyze else 'off'}",
        "log_timing = off",
    ) as plans:
        search(conn, agent, **options)
    return "\n".join(plans)


def test_an_ann_tenant_without_links_runs_no_supersession_step(
    conn: psycopg.Connection,
) -> None:
    load(conn, "linked", [OLD, NEW])
    load(conn, "plain", [OLD, NEW], linked=False)
    to_ann(conn, "linked")
    assert index_tenant(conn, "plain") > 0
    plain = nested_plans(conn, "plain", analyze=True)
    linked = nested_plans(conn, "linked", analyze=True)
    # the candidates' statement ran in both (its BM25 weights are in it)
    assert "CTE weights" in plain and "CTE weights" in linked
    # one generic plan for both: the supersession steps are in it, skipped at run time
    # (One-Time Filters) without a link; with one the heads are looked up (memex._ann_heads,
    # its own cached plan), and the walk (memex._supersession_heads) runs
    heads = re.findall(r"Function Scan on _ann_heads.*", plain)
    assert heads and all("never executed" in h for h in heads), heads
    assert "Function Scan on _supersession_heads" not in plain  # the walk never started
    heads = re.findall(r"Function Scan on _ann_heads.*", linked)
    assert heads and not any("never executed" in h for h in heads), heads
    assert search(conn, "linked")[0] == NEW and search(conn, "plain")[0] == OLD


def statement_plans(conn: psycopg.Connection, agent: str, marker: str, **options: Any) -> list[str]:
    """The plans (without their query text, as JSON) of the statements whose text holds
    `marker` among those of the default request on `agent` with the options given."""
    plans = [
        json.JSONDecoder().raw_decode(p[p.index("{") :])[0]
        for p in nested_plans(conn, agent, "json", **options).split("plan:")[1:]
    ]
    return [json.dumps(p["Plan"]) for p in plans if marker in p["Query Text"]]


def candidates_plan(conn: psycopg.Connection, agent: str, **options: Any) -> str:
    """The plan of memex._candidates_ann's statement (without its query text) among those
    of the default request on `agent` with the options given, as JSON."""
    (plan,) = statement_plans(conn, agent, "weights as materialized", **options)
    return plan


# the statements of memex._ann_nearest_rows and memex._ann_newest_rows (the steps that read
# the tenant in an index's order)
NEAREST = "order by m.embedding <=> p_query_embedding"
NEWEST = "order by m.created_at desc"


def test_the_ann_candidates_are_planned_once_with_the_tenant_scans_per_call(
    conn: psycopg.Connection,
) -> None:
    # memex.search passes its filters as one memex.search_filters value (revision 0035).
    # memex._candidates_ann's statement has one generic plan, cached for the session (issue
    # 39: planned for each call it was ~5 ms of a 200,000-memory tenant's request): it
    # reads the tenant and the filters as parameters. The steps that read the tenant in an
    # index's order are planned for each call, so each field is a constant there: a filter
    # not given is not in their plan at all, a filter given is compared to its value.
    load(conn, "filtered", [OLD, NEW], linked=False)
    assert index_tenant(conn, "filtered") > 0
    candidates = candidates_plan(conn, "filtered")
    assert re.search(r"agent_id = \$\d+", candidates), candidates  # generic: parameters
    assert "'filtered'" not in candidates
    fields = re.compile(r"\(\$\d+\)\.|memory_types|embedding_model|include_archived|as_of|valid_at")
    for marker in (NEAREST, NEWEST):
        (default,) = statement_plans(conn, "filtered", marker)
        assert "'filtered'" in default  # a custom plan: the tenant is a constant
        assert not fields.search(default)  # no field read off the filters' row per memory
        assert "created_at >=" not in default and "metadata @>" not in default
        (after,) = statement_plans(conn, "filtered", marker, created_after=NOW - timedelta(days=45))
        assert not fields.search(after) and "created_after" not in after
        assert re.search(r"created_at >= '\d{4}-\d\d-\d\d", after)
    assert search(conn, "filtered", created_after=NOW - timedelta(days=45)) == search(
        conn, "filtered", created_after=NOW - timedelta(days=45), include_archived=False
    )


def test_the_candidate_helpers_take_the_filters_as_one_value(
    conn: psycopg.Connection,
) -> None:
    # a new search filter is a parameter of memex.search, an attribute of
    # memex.search_filters and a condition of memex._filtered_memories: the helpers between
    # them pass the one value on, with no argument per filter to add
    rows = conn.execute(
        "select p.proname, p.proargnames::text[],"
        " array(select format_type(t, null) from unnest(p.proargtypes) t)"
        " from pg_proc p where p.pronamespace = 'memex'::regnamespace"
        " and p.proname in ('_filtered_memories', '_supersession_heads', '_candidates_exact',"
        " '_candidates_ann', '_ann_heads', '_ann_nearest_rows', '_ann_newest_rows',"
        " '_text_rows', '_ann_neighbour_rows')"
    ).fetchall()
    assert sorted(r[0] for r in rows) == [
        "_ann_heads",
        "_ann_nearest_rows",
        "_ann_neighbour_rows",
        "_ann_newest_rows",
        "_candidates_ann",
        "_candidates_exact",
        "_filtered_memories",
        "_supersession_heads",
        "_text_rows",
    ]
    attributes = conn.execute(
        "select array_agg(a.attname::text order by a.attnum) from pg_attribute a"
        " where a.attrelid = 'memex.search_filters'::regclass and a.attnum > 0"
    ).fetchone()
    assert attributes is not None
    filters = {f"p_{a}" for a in attributes[0]}
    assert filters >= {"p_memory_types", "p_embedding_model", "p_metadata", "p_include_archived"}
    assert filters >= {"p_as_of", "p_valid_at", "p_created_after", "p_created_before"}
    for name, arguments, types in rows:
        assert not filters & set(arguments), name
        assert types.count("memex.search_filters") == 1, name


SEARCH_FILTERS = Path(__file__).resolve().parents[1] / "sql" / "memories" / "008_search_filters.sql"


def test_a_filter_added_to_the_type_is_not_written_into_the_callers_that_leave_it_out(
    conn: psycopg.Connection,
) -> None:
    # memex._search_filters is written from memex.search_filters' attributes on every
    # migrate: after `alter type ... add attribute` (a revision) and the SQL layer applied
    # again, it takes the new filter by name, and memex._live_memories (count, list, get,
    # the writes), which names only the filters it takes, works unedited
    load(conn, "added", [OLD, NEW], linked=False)
    before = conn.execute("select memex.count('added', 'u')").fetchone(), search(conn, "added")
    # inlined wherever it is called, never run as a statement of its own (an immutable
    # function of constant arguments is, at each planning of a custom plan)
    plans = nested_plans(conn, "added", alpha=1.0, mode="vector")
    with logged_plans(conn) as plans_of_count:
        conn.execute("select memex.count('added', 'u')")
        conn.execute("select * from memex.list_memories('added', 'u')")
    assert "Query Text: select memex.count" in "\n".join(plans_of_count)
    assert "select row(" not in plans and "select row(" not in "\n".join(plans_of_count)
    older = conn.execute(
        "select p.oid::regprocedure::text from pg_proc p where p.proname = '_search_filters'"
        " and p.pronamespace = 'memex'::regnamespace"
    ).fetchone()
    assert older is not None
    conn.execute("alter type memex.search_filters add attribute probe_floor float8")
    conn.execute(f"drop function {older[0]}")  # as the revision does
    conn.execute(SEARCH_FILTERS.read_text(encoding="utf-8"))
    built = conn.execute(
        "select (f).probe_floor, (f).include_archived, (f).metadata"
        " from memex._search_filters(p_probe_floor => 0.5, p_include_archived => true) f"
    ).fetchone()
    assert built == (0.5, True, None)
    forms = conn.execute(
        "select count(*) from pg_proc where proname = '_search_filters'"
        " and pronamespace = 'memex'::regnamespace"
    ).fetchone()
    assert forms == (1,)
    after = conn.execute("select memex.count('added', 'u')").fetchone(), search(conn, "added")
    assert after == before and OLD in after[1]
    # inlined: the live memories' plan compares the columns to the values, no row is built
    plan = "\n".join(
        r[0]
        for r in conn.execute(
            "explain (verbose) select * from memex._live_memories('added', 'u', null, null, now())"
        )
    )
    assert "search_filters" not in plan and "ROW(" not in plan, plan


def test_the_policies_read_the_services_caller_inline(conn: psycopg.Connection) -> None:
    def stored(agent: str) -> Any:
        return conn.execute(
            "select count(*) from memex.store_many(%s, array['u', 'u'], array['a', 'b'],"
            " array[%s, %s]::public.vector[], 'test-model')",
            ([agent] * 2, "[1" + ",0" * 383 + "]", "[0,1" + ",0" * 382 + "]"),
        ).fetchone()

    assert stored("mine") == (2,) and stored("theirs") == (2,)
    with conn.transaction():
        conn.execute("set local role memex_app")
        conn.execute(
            "select set_config('memex.caller', %s, true)",
            ('{"all": false, "agent": "mine", "access": "read", "actor": "key:k"}',),
        )
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "explain (verbose, costs off) select count(*) from memex.memories"
            ).fetchall()
        )
        # the InitPlans every statement evaluates (memex._caller_all, and _caller_writes in
        # writes) compute the caller from the transaction's setting themselves; those a
        # caller of every tenant never evaluates are one call each, not inlined copies of
        # the caller's expression that every statement compiled all the same
        # (bench/RESULTS.md, "Issue 39 item 1, Postgres side (session 9)")
        assert "current_setting('memex.caller'::text, true)" in plan
        assert not re.search(r"memex\._caller(_all)?\(\)", plan)
        assert "memex._caller_agent()" in plan
        assert plan.count("memex._caller_users()") == 2
        assert plan.count("current_setting('memex.caller'::text, true)") == 2
        # and they still see the entered caller's tenant only
        assert conn.execute("select distinct agent_id from memex.memories").fetchall() == [
            ("mine",)
        ]


def load_words_tenant(conn: psycopg.Connection, agent: str, rows: int) -> None:
    """A tenant of `rows` memories of 30 words each from a Zipf-like vocabulary of 5,000
    (w0 the commonest, as bench/ann_default_bench.py's), random vectors, in the ANN index,
    the table analyzed: realistic statistics for the text step's plan."""
    conn.execute(
        "insert into memex.memories (agent_id, user_id, content, embedding, embedding_model)"
        " select %s, 'u',"
        "  (select string_agg('w' || (floor(exp(random() * ln(5010.0))) - 10)::int, ' ')"
        "   from generate_series(1, 30) w where i > 0),"
        "  (select array_agg(random()::real - 0.5) from generate_series(1, 384) d"
        "   where i > 0)::public.vector(384),"
        "  'test-model'"
        " from generate_series(1, %s) i",
        (agent, rows),
    )
    assert index_tenant(conn, agent) > 0
    conn.execute("vacuum (analyze) memex.memories")


def text_step_scans(conn: psycopg.Connection, agent: str, text: str) -> str:
    """How the default request's text step (text_read in memex._candidates_ann) reads
    memex.memories: its plan nodes on the table, as one text (those of the step itself
    and of the statement of memex._text_rows it runs per query, issue 39)."""
    with logged_plans(conn) as plans:
        conn.execute(
            "select id from memex.search(p_agent_id => %s, p_user_id => 'u',"
            " p_query_embedding => %s::public.vector(384), p_query_text => %s,"
            " p_top_k => 10)",
            (agent, "[1" + ",0" * 383 + "]", text),
        )
    (plan,) = [p for p in plans if "CTE text_hits" in p]
    step = plan[plan.index("CTE text_hits") :]
    step = step[: step.index("CTE contributors")]
    lookups = [p for p in plans if "m.tsv @@ p_query" in p]  # memex._text_rows's statement
    assert lookups or "_text_rows" not in step, step
    return "\n".join(
        line for part in [step, *lookups] for line in part.splitlines() if " on memories" in line
    )


COMMON_WORDS = "w0 w3 w9 w21"  # each held by far more than the text step's budget (2.5 %)


def test_the_text_step_of_a_big_tenant_reads_the_gin_index_when_it_may(
    conn: psycopg.Connection,
) -> None:
    # The control of the test below: with memex.search owned by the superuser (what
    # bench/ann_default_bench.py measured until 2026-12-06: row-level security does not
    # apply), the text step of a tenant past the ANN threshold probes memories_tsv_idx per
    # query, common words or not; a scan of the whole tenant is never right there.
    load_words_tenant(conn, "words", 20_000)
    (signature,) = conn.execute(
        "select p.oid::regprocedure::text from pg_proc p"
        " where p.pronamespace = 'memex'::regnamespace and p.proname = 'search'"
    ).fetchone() or ("",)
    conn.execute(f"alter function {signature} owner to current_user")
    try:
        for text in (COMMON_WORDS, "w0 w3 w9 w4321"):
            scans = text_step_scans(conn, "words", text)
            assert "memories_tsv_idx" in scans and "Seq Scan" not in scans, (text, scans)
    finally:
        conn.execute(f"alter function {signature} owner to memex_owner")


def test_the_text_step_of_a_big_tenant_reads_the_gin_index_as_migrated(
    conn: psycopg.Connection,
) -> None:
    load_words_tenant(conn, "words", 20_000)
    owner = conn.execute(
        "select p.proowner::regrole::text from pg_proc p"
        " where p.pronamespace = 'memex'::regnamespace and p.proname = 'search'"
    ).fetchone()
    assert owner == ("memex_owner",)  # a security definer held to row-level security
    # issue 39: the step reads through memex._text_rows, owned by memex_text_lookup
    # (BYPASSRLS, revision 0039), as the embedded server's superuser migration creates it
    (lookup_owner,) = conn.execute(
        "select p.proowner::regrole::text from pg_proc p"
        " where p.pronamespace = 'memex'::regnamespace and p.proname = '_text_rows'"
    ).fetchone() or (None,)
    assert lookup_owner == "memex_text_lookup"
    for text in (COMMON_WORDS, "w0 w3 w9 w4321"):
        scans = text_step_scans(conn, "words", text)
        assert "memories_tsv_idx" in scans and "Seq Scan" not in scans, (text, scans)


def test_the_text_step_reads_each_match_once_and_sorts_scores_only(
    conn: psycopg.Connection,
) -> None:
    # issue 39 item 0 (bench/RESULTS.md, "Issue 39 item 0 (session 8)"). When the
    # rarest-terms query reads all its matches, a pair with one of its terms holds only
    # memories it read: the step read them again (a quarter of its rows at 200,000
    # memories). w4321 is rare (~20 holders of 20,000), w0, w3 and w9 are held by
    # thousands: the rarest-terms query is 'w4321', and only pairs of the common words
    # are read. And text_hits' sort carries the score, not each row's tsvector (it spilled
    # past work_mem at ~6,000 rows when the cached plan carried the score's inputs).
    load_words_tenant(conn, "words", 20_000)
    with logged_plans(conn, "log_verbose = on") as plans:
        conn.execute(
            "select id from memex.search(p_agent_id => 'words', p_user_id => 'u',"
            " p_query_embedding => %s::public.vector(384), p_query_text => %s,"
            " p_top_k => 10)",
            ("[1" + ",0" * 383 + "]", "w0 w3 w9 w4321"),
        )
    queries = [  # each memex._text_rows call's tsquery (verbose: the column qualified)
        found.group(1)
        for p in plans
        if "m.tsv @@ p_query" in p
        and (found := re.search(r"Index Cond: \((?:\w+\.)?tsv @@ ('.*?')::tsquery\)", p))
    ]
    (terms,) = [q for q in queries if "&" not in q]
    held = set(re.findall(r"w\d+", terms))
    pairs = [set(re.findall(r"w\d+", q)) for q in queries if "&" in q]
    assert pairs and all(not pair & held for pair in pairs), (terms, queries)
    (plan,) = [p for p in plans if "CTE text_hits" in p]
    step = plan[plan.index("CTE text_hits") : plan.index("CTE contributors")]
    sort = step[step.index("->  Sort", step.index("->  Unique")) :]  # distinct on's
    output = sort[sort.index("Output:") :].splitlines()[0]
    assert "tsv" not in output, output


def test_the_text_scores_skip_the_terms_not_given(conn: psycopg.Connection) -> None:
    # issue 39 item 0 (bench/RESULTS.md, "Issue 39 item 0 (session 9)"). memex._held_bm25
    # (inlined: the text rows and the candidates are scored with it, thousands a big
    # tenant's request) takes eight terms; those not given (null) are skipped by a case,
    # not carried through their block of the formula as nulls.
    load_words_tenant(conn, "scored", 2_000)
    with logged_plans(conn, "log_verbose = on") as plans:
        conn.execute(
            "select id from memex.search(p_agent_id => 'scored', p_user_id => 'u',"
            " p_query_embedding => %s::public.vector(384), p_query_text => 'w0 w3',"
            " p_top_k => 10)",
            ("[1" + ",0" * 383 + "]",),
        )
    (plan,) = [p for p in plans if "CTE text_hits" in p]
    for term in range(1, 9):  # in the text rows' score and the candidates'
        assert len(re.findall(rf"CASE WHEN \(\w+\.term{term} IS NULL\) THEN", plan)) == 2, term


def sort_keys(plan: str) -> list[list[str]]:
    """The keys of each Sort node of a JSON plan."""
    found: list[list[str]] = []

    def walk(node: dict[str, Any]) -> None:
        if node["Node Type"] == "Sort":
            found.append([str(k) for k in node["Sort Key"]])
        for child in node.get("Plans", []):
            walk(child)

    walk(json.loads(plan))
    return found


def test_the_candidates_are_scored_in_window_order_without_a_sort_by_id(
    conn: psycopg.Connection,
) -> None:
    # issue 39 item 0 (bench/RESULTS.md, "Issue 39 item 0 (session 9)"). The candidates
    # (~1,700 rows with their tsvectors at 200,000 memories) are kept once each in
    # memex.search's window order (created_at, id); the cached generic plan joined the
    # heads and later versions to them (empty without links or as_of) by merge joins, which
    # sorted all of them again by id first.
    load_words_tenant(conn, "ordered", 5_000)
    plan = candidates_plan(conn, "ordered")
    assert '"Merge Join"' not in plan, plan
    # (the union's rows are named after its first branch, nearest)
    candidates = [k for k in sort_keys(plan) if k[0].startswith("nearest.")]
    assert candidates == [["nearest.created_at", "nearest.id"]], sort_keys(plan)


def scans_of_memories(plan: str) -> list[str]:
    """Each node of a JSON plan that reads memex.memories: its type and index."""
    found: list[str] = []

    def walk(node: dict[str, Any]) -> None:
        if node.get("Relation Name") == "memories":
            found.append(f"{node['Node Type']} {node.get('Index Name', '')}".strip())
        for child in node.get("Plans", []):
            walk(child)

    walk(json.loads(plan))
    return found


def test_a_big_tenant_among_small_ones_reads_its_indexes_in_order(
    conn: psycopg.Connection,
) -> None:
    # The generic plan of memex._candidates_ann assumes an average-sized tenant: among 300
    # tenants of 3 memories, a few rows. The steps whose plan depends on the tenant's size
    # (the nearest neighbours, the newest memories, the newest index entries) are planned
    # for each call: for a 20,000-memory tenant they read the vector index and the recency
    # index in order, never sort the tenant; the statement itself reads memex.memories only
    # by primary key or a few rows in index order (the neighbours), never scans it.
    conn.execute(
        "insert into memex.memories (agent_id, user_id, content, embedding, embedding_model)"
        " select 'small' || (i % 300), 'u', 'w1 w2 w' || i,"
        "  (select array_agg(random()::real - 0.5) from generate_series(1, 384) d"
        "   where i > 0)::public.vector(384), 'test-model'"
        " from generate_series(1, 900) i"
    )
    load_words_tenant(conn, "words", 20_000)
    for options in ({}, {"alpha": 0.7}):
        (nearest,) = statement_plans(conn, "words", NEAREST, **options)
        assert scans_of_memories(nearest) == ["Index Scan memories_embedding_hnsw_idx"], nearest
        candidates = candidates_plan(conn, "words", **options)
        scans = scans_of_memories(candidates)
        assert scans and all(
            s in ("Index Scan memories_pkey", "Index Scan memories_tenant_recent_idx")
            or s.startswith("Index Scan memories_tenant_key")
            or s.startswith("Index Only Scan memories_supersedes")
            or s.startswith("Index Scan memories_supersedes")
            for s in scans
        ), scans
    (newest,) = statement_plans(conn, "words", NEWEST)
    assert scans_of_memories(newest) == ["Index Scan memories_tenant_recent_idx"], newest
    assert '"Sort"' not in newest
    (entries,) = statement_plans(conn, "words", "r.agent_id = p_agent_id", alpha=0.7)
    assert scans_of_memories(entries) == ["Index Only Scan memories_tenant_recent_idx"], entries
    assert '"Sort"' not in entries


def neighbour_probes(conn: psycopg.Connection, agent: str) -> list[tuple[str, str, str]]:
    """Each plan node of the default request on `agent` that probes an index of
    memex.memories from a hit's place in (created_at, id) order (the neighbour probes):
    its type, index and index condition."""
    found: list[tuple[str, str, str]] = []

    def walk(node: dict[str, Any]) -> None:
        index = str(node.get("Index Name", ""))
        condition = str(node.get("Index Cond", ""))
        if index.startswith("memories_") and "ROW(created_at, id)" in condition:
            found.append((str(node["Node Type"]), index, condition))
        for child in node.get("Plans", []):
            walk(child)

    for p in nested_plans(conn, agent, "json").split("plan:")[1:]:
        walk(json.JSONDecoder().raw_decode(p[p.index("{") :])[0]["Plan"])
    return found


def test_the_neighbour_probes_of_a_big_tenant_descend_the_tenant_key_index_as_migrated(
    conn: psycopg.Connection,
) -> None:
    # Issue 39: the context window's neighbour probes (the live memories just before and
    # after each hit, ~600 a big tenant's request) are meant for
    # memories_tenant_key_recent_idx (revision 0025, the tenant's 64-bit key). Under the
    # forced row-level security of memex.memories the key's functions (hashtextextended,
    # length, textcat: not leakproof) were only a filter, and the probes descended
    # memories_tenant_recent_idx; memex._ann_neighbour_rows (owned by memex_text_lookup,
    # BYPASSRLS, as this superuser migration makes it) gives the key back.
    load_words_tenant(conn, "keyed", 5_000)
    (owner,) = conn.execute(
        "select p.proowner::regrole::text from pg_proc p"
        " where p.pronamespace = 'memex'::regnamespace and p.proname = 'search'"
    ).fetchone() or (None,)
    assert owner == "memex_owner"  # a security definer held to row-level security
    probes = neighbour_probes(conn, "keyed")
    assert len(probes) == 2, probes  # before and after each hit
    for node, index, condition in probes:
        # in order, a few rows each (not a bitmap scan of the tenant's rows before the hit,
        # sorted: what the generic plan took here, the key a filter and the row comparison
        # the only index condition)
        assert node == "Index Scan", probes
        assert index == "memories_tenant_key_recent_idx", probes
        assert condition.startswith("((hashtextextended("), probes


def test_the_neighbour_probes_answer_alike_without_the_lookup_role(
    conn: psycopg.Connection,
) -> None:
    # where migrate cannot give memex._ann_neighbour_rows to memex_text_lookup it is
    # memex_owner's, held to row-level security (the key a filter again): the same answers
    signature = (
        "memex._ann_neighbour_rows(text, text, public.halfvec, timestamptz, boolean,"
        " memex.search_filters, timestamptz[], uuid[], integer)"
    )
    load_words_tenant(conn, "keyed", 3_000)
    conn.execute(
        "update memex.memories set expires_at = now() - interval '1 day'"
        " where agent_id = 'keyed' and random() < 0.3"
    )

    (now,) = conn.execute("select now()").fetchone() or (None,)

    def answers() -> list[tuple[Any, ...]]:
        return [
            tuple(r)
            for text in ("w0 w3 w9 w21", "w1 w40 w300 w4321", "w7 w77 w777")
            for r in conn.execute(
                "select id, score, relevance"
                " from memex.search(p_agent_id => 'keyed', p_user_id => 'u',"
                " p_query_embedding => %s::public.vector(384), p_query_text => %s,"
                " p_top_k => 20, p_now => %s)",
                ("[1" + ",0.01" * 383 + "]", text, now),
            ).fetchall()
        ]

    migrated = answers()
    assert len(migrated) == 60
    conn.execute(f"alter function {signature} owner to memex_owner")
    try:
        assert not neighbour_probes(conn, "keyed")[0][2].startswith("((hashtextextended(")
        assert answers() == migrated
    finally:
        conn.execute(f"alter function {signature} owner to memex_text_lookup")
