-- privileges: tenant-helper
-- memex._supersession_heads: each memory of one tenant that a newer one superseded
-- (memex.store's p_supersedes: superseded_at set, never consolidation's links), with its
-- head: the last of its successors, down the chain, that the search sees. Both it and
-- every successor walked must be memories of the moment and of the filters
-- (memex._filtered_memories with superseded ones kept, of p_filters, memex.search's
-- memex.search_filters): a successor recorded after as_of, expired, of another type or
-- model or not matching the metadata ends the walk before it.
-- The head may itself be hidden (superseded by a memory the filters leave out); callers
-- keep only heads they show. Read through the successors' supersedes
-- (memories_supersedes_idx, revision 0036): a tenant without links costs one empty index
-- probe, and returns before the walk. memex._candidates_exact and
-- memex.search's exact vector-only path give each head the best match of the memories
-- listed with it; memex._candidates_ann passes p_ids, the candidates it found superseded, and
-- only those are walked (empty: nothing; null: every link of the tenant).
create or replace function memex._supersession_heads(
    p_agent_id text,
    p_user_id text,
    p_now timestamptz,
    p_filters memex.search_filters,
    p_ids uuid[] default null
)
returns table (id uuid, head uuid)
-- a few links a tenant: callers' plans look them up by id, not hash the table
language plpgsql stable rows 10 set search_path = pg_catalog, public, pg_temp
-- PL/pgSQL for its cached plan: planning this query anew took ~0.8 ms a call (a SQL
-- function's is not kept between calls), its execution ~0.1 ms; one generic plan serves
-- every tenant (index probes by tenant and by id).
set plan_cache_mode = force_generic_plan
as $$
#variable_conflict use_column
begin
    if cardinality(p_ids) = 0 then
        return;  -- no candidate superseded: nothing to walk (a tenant without links)
    end if;
    -- every link of the tenant asked for, and it has none (one empty probe of
    -- memories_supersedes_idx): return before the walk, whose plan, empty as it then is,
    -- still costs every search of such a tenant its start and end (~0.1-0.3 ms, most of
    -- this function's time; bench/RESULTS.md, "Per-request cost")
    if p_ids is null and not exists (select from memex.memories s
                                     where s.agent_id = p_agent_id
                                       and s.user_id = p_user_id
                                       and s.supersedes is not null) then
        return;
    end if;
    return query
    with recursive links as (
        -- the superseded memories: p_ids, or every memory the tenant's successors list
        -- in supersedes (memories_supersedes_idx, revision 0036: the older memory's own
        -- columns are not indexed, so its update stays HOT), by primary key
        select m.id, m.superseded_by
        from memex.memories m
        where m.id = any (coalesce(p_ids, (select array_agg(o.id)
                                           from memex.memories s
                                           cross join unnest(s.supersedes) o(id)
                                           where s.agent_id = p_agent_id
                                             and s.user_id = p_user_id
                                             and s.supersedes is not null)))
          and m.agent_id = p_agent_id and m.user_id = p_user_id
          and m.superseded_at is not null
          and exists (select from memex._filtered_memories(p_agent_id, p_user_id, p_now, true,
                                                           p_filters) l
                      where l.id = m.id)
    ),
    chain as (
        -- one row per step: the memory, the successor reached, how far
        select k.id, s.id as head, 1 as depth
        from links k
        cross join lateral (
            select l.id
            from memex._filtered_memories(p_agent_id, p_user_id, p_now, true, p_filters) l
            where l.id = k.superseded_by
        ) s
        union all
        select c.id, s.id, c.depth + 1
        from chain c
        join memex.memories h on h.id = c.head and h.superseded_at is not null
        cross join lateral (
            select l.id
            from memex._filtered_memories(p_agent_id, p_user_id, p_now, true, p_filters) l
            where l.id = h.superseded_by
        ) s
        where c.depth < 1000
    )
    select distinct on (c.id) c.id, c.head
    from chain c
    order by c.id, c.depth desc;
end
$$;

comment on function memex._supersession_heads(text, text, timestamptz, memex.search_filters,
                                              uuid[]) is
    'A tenant''s superseded memories, each with the last successor the search sees.';
