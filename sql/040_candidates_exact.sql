-- memex._candidates_exact: every live memory of one tenant with its similarity and
-- full-text rank: the exact, brute-force candidate set. memex.search uses it for tenants
-- up to settings.exact_scan_max_rows, where a scan through the (agent_id, user_id,
-- created_at) index is fast and recall is 1.0 by construction.
create or replace function memex._candidates_exact(
    p_agent_id text,
    p_user_id text,
    p_query_embedding vector,
    p_tsquery tsquery,
    p_memory_types memex.memory_type[],
    p_embedding_model text,
    p_now timestamptz
)
returns setof memex._candidate
language sql
stable
set search_path = pg_catalog, public, pg_temp
as $$
    select m.id, m.importance::double precision, m.created_at,
           1 - (m.embedding <=> p_query_embedding),
           case when m.tsv @@ p_tsquery then ts_rank_cd(m.tsv, p_tsquery, 1) end
    from memex.memories m
    where m.agent_id = p_agent_id
      and m.user_id = p_user_id
      and m.archived_at is null
      and (m.expires_at is null or m.expires_at > p_now)
      and (p_memory_types is null or m.memory_type = any (p_memory_types))
      and (p_embedding_model is null or m.embedding_model = p_embedding_model)
$$;

comment on function memex._candidates_exact(text, text, vector, tsquery,
                                            memex.memory_type[], text, timestamptz) is
    'All live memories of a tenant as scored candidates (exact search).';
