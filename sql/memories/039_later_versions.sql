-- privileges: tenant-helper
-- memex._later_versions: for a search as of p_as_of (issue 36), each memory of one tenant
-- recorded by then and superseded after it (memex.store's p_supersedes: superseded_at
-- set, never consolidation's links), with every later version of it down the chain that
-- was recorded after p_as_of (of p_embedding_model when given): the fact's later
-- wordings, which the search never returns at p_as_of. memex._candidates_exact,
-- memex._candidates_ann and memex.search's exact vector-only path give such a memory the
-- best match of its later versions, so the version valid then is found by any wording of
-- the fact, as a successor ranks with its predecessors' (memex._supersession_heads).
-- Read back from the successors recorded after p_as_of (memories_supersedes_idx, revision
-- 0036: a tenant without links costs one empty probe), through each link the older memory
-- still holds (its superseded_by), by primary key. Null p_as_of: nothing.
create or replace function memex._later_versions(
    p_agent_id text,
    p_user_id text,
    p_as_of timestamptz,
    p_embedding_model text
)
returns table (id uuid, later uuid)
language sql stable rows 10 set search_path = pg_catalog, public, pg_temp
as $$
    with recursive back as (
        -- (the later version, the memory it superseded, the successor listing it)
        select s.id as later, o.id as older, s.id as step, 1 as depth
        from memex.memories s cross join unnest(s.supersedes) o(id)
        where p_as_of is not null
          and s.agent_id = p_agent_id and s.user_id = p_user_id
          and s.supersedes is not null and s.created_at > p_as_of
          and (p_embedding_model is null or s.embedding_model = p_embedding_model)
        union all
        -- on down while the memory reached was recorded after p_as_of too
        select b.later, o.id, m.id, b.depth + 1
        from back b
        join memex.memories m on m.id = b.older and m.superseded_by = b.step
        cross join unnest(m.supersedes) o(id)
        where m.created_at > p_as_of and m.supersedes is not null and b.depth < 1000
    )
    select distinct m.id, b.later
    from back b join memex.memories m on m.id = b.older and m.superseded_by = b.step
    where m.agent_id = p_agent_id and m.user_id = p_user_id
      and m.created_at <= p_as_of and m.superseded_at > p_as_of
$$;

comment on function memex._later_versions(text, text, timestamptz, text) is
    'Memories superseded after as_of, each with its later versions recorded after it.';
