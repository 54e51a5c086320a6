-- privileges: tenant-helper
-- memex._later_match: for a search as of p_filters.as_of (issue 36), the memories shown then
-- (memex._filtered_memories) that were superseded after it, each with its own values and
-- the best similarity and BM25 score of its later versions (memex._later_versions:
-- recorded after as_of, never returned), scored with the statistics the caller passes
-- (p_terms with their document frequencies p_df, size p_n, mean length p_avgdl: the exact
-- path's of the memories shown, the ANN path's stored ones). Null as_of: nothing.
-- memex._candidates_exact and memex._candidates_ann give each such memory the better of
-- its own match and this one. PL/pgSQL for its cached plan, as memex._ann_heads: its
-- callers are planned anew with each call, and this step, a function scan there, adds
-- nothing to that planning when as_of is not given.
create or replace function memex._later_match(
    p_agent_id text,
    p_user_id text,
    p_query_embedding public.halfvec,
    p_now timestamptz,
    p_include_superseded boolean,
    p_filters memex.search_filters,
    p_terms text[],
    p_df double precision[],
    p_n double precision,
    p_avgdl double precision
)
returns table (id uuid, importance double precision, created_at timestamptz,
               similarity double precision, tsv tsvector, tsv_length integer,
               later_similarity double precision, later_text_rank double precision)
-- a few links a tenant
language plpgsql stable rows 10 set search_path = pg_catalog, public, pg_temp
set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
begin
    if p_filters.as_of is null then
        return;
    end if;
    return query
    select l.id, memex._valid_importance(l.importance, l.valid_to, p_now, p_filters.valid_at),
           l.created_at, 1 - (l.embedding <=> p_query_embedding), l.tsv, l.tsv_length,
           k.similarity, k.text_rank
    from (select v.id, max(v.similarity) as similarity, max(v.text_rank) as text_rank
          from (select v.id, 1 - (s.embedding <=> p_query_embedding) as similarity,
                       (select sum(memex._bm25(coalesce(cardinality(o.positions), 1),
                                               s.tsv_length, f.df, p_n, p_avgdl))
                        from unnest(ts_filter(setweight(s.tsv, 'A', p_terms), '{a}')) o
                             join unnest(p_terms, p_df) f(lexeme, df)
                               on f.lexeme = o.lexeme) as text_rank
                from memex._later_versions(p_agent_id, p_user_id, p_filters.as_of,
                                           p_filters.embedding_model) v
                join memex.memories s on s.id = v.later) v
          group by v.id) k
    join memex._filtered_memories(p_agent_id, p_user_id, p_now, p_include_superseded,
                                  p_filters) l on l.id = k.id;
end
$$;

comment on function memex._later_match(text, text, public.halfvec, timestamptz, boolean,
                                     memex.search_filters, text[], double precision[],
                                     double precision, double precision) is
    'ANN candidates superseded after as_of, with the best match of their later versions.';
