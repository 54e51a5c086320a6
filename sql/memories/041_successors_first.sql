-- privileges: tenant-helper
-- memex._successors_first: memex.search's top k, in its order, except that with p_apply
-- (search's p_include_superseded) a memory superseded by another hit ranks after it: the
-- rule is on the score, not left to luck. Walking each supersession chain present in the
-- hits from its newest member (a hit whose successor is not among them), a superseded
-- hit's score becomes its own, or just below its successor's (new score: successor's
-- minus 1e-9 of it, at least 1e-9) when its own is not already lower; the hits are then
-- ordered as search orders them (score, newer first, id). A memory superseded by
-- consolidation (archived_at set: its summary stands in for it) is not a supersession
-- link here. Without p_apply the hits come back unchanged, in order.
create or replace function memex._successors_first(
    p_hits memex.search_hit[],
    p_apply boolean
)
returns setof memex.search_hit
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    if not coalesce(p_apply, false) then
        return query
            select h.id, h.agent_id, h.user_id, h.memory_type, h.content, h.importance,
                   h.metadata, h.created_at, h.expires_at, h.similarity, h.text_rank,
                   h.relevance, h.recency, h.score, h.source_ids, h.superseded_by,
                   h.archived_at, h.updated_at, h.embedding_model, h.valid_from, h.valid_to,
                   h.superseded_at, h.supersedes
            from unnest(p_hits) with ordinality as h
            order by h.ordinality;
        return;
    end if;
    return query
    with recursive hits as (
        select h.* from unnest(p_hits) h
    ),
    chain as (
        select h.id, h.score as adjusted from hits h
        where h.superseded_by is null or h.archived_at is not null
           or not exists (select from hits s where s.id = h.superseded_by)
        union all
        select c.id,
               case when c.score < p.adjusted then c.score
                    else p.adjusted - greatest(abs(p.adjusted) * 1e-9, 1e-9) end
        from chain p join hits c on c.superseded_by = p.id and c.archived_at is null
    )
    select h.id, h.agent_id, h.user_id, h.memory_type, h.content, h.importance, h.metadata,
           h.created_at, h.expires_at, h.similarity, h.text_rank, h.relevance, h.recency,
           coalesce(c.adjusted, h.score), h.source_ids, h.superseded_by, h.archived_at,
           h.updated_at, h.embedding_model, h.valid_from, h.valid_to, h.superseded_at,
           h.supersedes
    from hits h left join chain c on c.id = h.id
    order by coalesce(c.adjusted, h.score) desc, h.created_at desc, h.id;
end
$$;

comment on function memex._successors_first(memex.search_hit[], boolean) is
    'Search hits with each superseded hit scored just below its successor among them.';
