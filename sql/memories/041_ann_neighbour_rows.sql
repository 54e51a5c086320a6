-- privileges: definer-helper
-- memex._ann_neighbour_rows: the neighbour step of memex._candidates_ann (its neighbours):
-- for each hit (p_created_at[i], p_ids[i]), the p_neighbours live memories of the tenant
-- (memex._filtered_memories, as the step's `live`) just before it and the p_neighbours just
-- after it in memex.search's window order (created_at, id), each with what the ranking
-- reads: its stored importance and valid_to (the caller applies memex._valid_importance),
-- its similarity to the query, tsvector and length. A memory next to two hits comes back
-- twice (the caller keeps one).
-- Why a function of its own: each probe is meant to descend
-- memories_tenant_key_recent_idx (revision 0025: the tenant's 64-bit key, then created_at
-- and id), ~600 probes a big tenant's default request. Row-level security is forced on
-- memex.memories and memex.search runs as memex_owner, which is held to it; under a policy
-- Postgres uses no non-leakproof function as an index condition, and the key's
-- (hashtextextended, length, textcat inside memex._tenant_key) are not, so the key was a
-- filter and the probes descended memories_tenant_recent_idx (two text columns) instead
-- (bench/RESULTS.md, "The default request's plan, cached"), as the text step scanned the
-- tenant before memex._text_rows. Like memex._text_rows (and for the same reason) this
-- function is owned by memex_text_lookup (NOLOGIN, BYPASSRLS, revision 0039;
-- sql/security/999_grants.sql) when that role exists, else by memex_owner (then the probes
-- read as before: the key a filter). It authorizes nobody: it reads the tenant it is
-- given, and only memex_owner may execute it (class definer-helper: revoked from PUBLIC,
-- memex_app and memex_tenant), that is only the security definer functions, which have
-- authorized their caller before they reach it (memex.search, through _candidates_ann).
-- One call for all the hits: a function scan's rows are kept in a tuplestore (~600 rows of
-- a tsvector each, well within work_mem). The plan is the same for any tenant (a few rows
-- in index order per hit), so one generic plan is cached per session (force_generic_plan:
-- the filters are parameters there, evaluated on the few rows each probe reads). Each probe
-- must read its index in order and stop after p_neighbours live rows: the generic plan's
-- estimate of the live rows is tiny (every filter a parameter), and on a table with fresh
-- statistics it took a bitmap scan of all the tenant's rows before (or after) the hit and
-- sorted them (~2,500 rows a probe at 5,000 memories); enable_sort off leaves the planner
-- only the reads in order.
create or replace function memex._ann_neighbour_rows(
    p_agent_id text,
    p_user_id text,
    p_query_embedding public.halfvec,
    p_now timestamptz,
    p_include_superseded boolean,
    p_filters memex.search_filters,
    p_created_at timestamptz[],
    p_ids uuid[],
    p_neighbours integer
)
returns table (id uuid, importance double precision, valid_to timestamptz,
               created_at timestamptz, similarity double precision, tsv tsvector,
               tsv_length integer)
language sql stable security definer set search_path = pg_catalog, pg_temp
-- one plan for any tenant, cached; each probe an index read in order, never the tenant's
-- rows on one side of the hit read by a bitmap scan and sorted (see above)
set plan_cache_mode = force_generic_plan
set enable_sort = off
as $$
    select n.*
    from unnest(p_created_at, p_ids) h(created_at, id)
    cross join lateral (
        select l.id, l.importance, l.valid_to, l.created_at,
               1 operator(pg_catalog.-) (l.embedding operator(public.<=>) p_query_embedding),
               l.tsv, l.tsv_length
        from memex._filtered_memories(p_agent_id, p_user_id, p_now, p_include_superseded,
                                      p_filters) l
        where (l.created_at, l.id) < (h.created_at, h.id)
          and memex._tenant_key(l.agent_id, l.user_id)
              = memex._tenant_key(p_agent_id, p_user_id)  -- its index
        order by l.created_at desc, l.id desc limit p_neighbours
    ) n
    union all
    select n.*
    from unnest(p_created_at, p_ids) h(created_at, id)
    cross join lateral (
        select l.id, l.importance, l.valid_to, l.created_at,
               1 operator(pg_catalog.-) (l.embedding operator(public.<=>) p_query_embedding),
               l.tsv, l.tsv_length
        from memex._filtered_memories(p_agent_id, p_user_id, p_now, p_include_superseded,
                                      p_filters) l
        where (l.created_at, l.id) > (h.created_at, h.id)
          and memex._tenant_key(l.agent_id, l.user_id)
              = memex._tenant_key(p_agent_id, p_user_id)  -- its index
        order by l.created_at, l.id limit p_neighbours
    ) n
$$;

comment on function memex._ann_neighbour_rows(text, text, public.halfvec, timestamptz,
                                              boolean, memex.search_filters, timestamptz[],
                                              uuid[], integer) is
    'The live memories of a tenant just before and after each hit in (created_at, id)'
    ' order, scored inputs, read through the tenant-key index (owner memex_text_lookup:'
    ' BYPASSRLS); memex_owner''s alone.';
