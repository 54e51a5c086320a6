-- privileges: definer-helper
-- memex._text_rows: the text step's read of memex._candidates_ann (its text_read): the
-- live memories of the tenant (memex._filtered_memories, as the step's `every`) matching
-- one tsquery, at most p_limit of them, as the GIN index (memories_tsv_idx) returns them.
-- Why a function of its own: row-level security is forced on memex.memories, and
-- memex.search (security definer) runs as memex_owner, which is held to it; under a
-- policy Postgres does not use a non-leakproof operator (`tsvector @@ tsquery`) as an
-- index condition, so the step scanned the whole tenant once per text query (~0.8-1.1 s
-- a default request at 200,000 memories, bench/RESULTS.md "The default request under
-- row-level security"). This function is owned by memex_text_lookup (NOLOGIN, BYPASSRLS,
-- revision 0039; sql/security/999_grants.sql gives it the ownership and the one table
-- privilege it needs, SELECT on memex.memories) when that role exists, else by memex_owner
-- (then it reads as before: a scan). It authorizes nobody: it filters by the tenant it is
-- given, and only memex_owner may execute it (class definer-helper: revoked from PUBLIC,
-- memex_app and memex_tenant), that is only the security definer functions, which have
-- authorized their caller before they reach it (memex.search, through _candidates_ann).
-- Planned for each call (its tsquery and the filters are constants there).
-- Its rows carry only the columns the step reads, by name: the caller keeps them in a
-- tuplestore (a function scan), and whole rows (~1.5 kB, the halfvec half of it) of the
-- ~4,000 a big tenant's request reads spilled it to a temporary file past work_mem
-- (bench/RESULTS.md, "The default request's plan, cached"); and memex.memories' column
-- order differs between databases (revision 0041).
create or replace function memex._text_rows(
    p_agent_id text,
    p_user_id text,
    p_now timestamptz,
    p_include_superseded boolean,
    p_filters memex.search_filters,
    p_query tsquery,
    p_limit bigint
)
returns table (id uuid, importance real, valid_to timestamptz, created_at timestamptz,
               tsv tsvector, tsv_length integer, superseded_at timestamptz,
               superseded_by uuid)
language sql stable security definer set search_path = pg_catalog, pg_temp
set plan_cache_mode = force_custom_plan
as $$
    -- the columns the text step reads, by name (no content or embedding: the similarity
    -- of the few it keeps is computed after, memex._candidates_ann's text_hits; ~1.5 kB a
    -- row less; and not memex.memories' column order, which differs between databases,
    -- revision 0041)
    select m.id, m.importance, m.valid_to, m.created_at, m.tsv, m.tsv_length,
           m.superseded_at, m.superseded_by
    from memex._filtered_memories(p_agent_id, p_user_id, p_now, p_include_superseded,
                                  p_filters) m
    where m.tsv @@ p_query
    limit p_limit
$$;

comment on function memex._text_rows(text, text, timestamptz, boolean, memex.search_filters,
                                     tsquery, bigint) is
    'The live memories of a tenant matching a tsquery, at most p_limit, read through the'
    ' GIN index (owner memex_text_lookup: BYPASSRLS); memex_owner''s alone.';
