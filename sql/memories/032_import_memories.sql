-- privileges: tenant
-- memex.import_memories: restore exported memories (memexdb import), keeping their ids
-- and timestamps exactly. Parallel arrays as memex.store_many, plus p_ids (null items get
-- a new id) and p_updated_at (null: now()); every item is checked as store_many
-- checks it. An id that already exists (in any tenant), or an id repeated in the batch
-- after its first item, is skipped, not overwritten, so an import can be re-run after a
-- failure. Returns the memories inserted, in input order. p_lineage (null items: none)
-- restores what consolidation recorded: {"source_ids": [...], "superseded_by": <id>,
-- "archived_at": <time>} and the memory's time (issue 36), each key optional:
-- "valid_from", "valid_to" (when the fact held), "supersedes" (ids), "superseded_at"
-- (with "superseded_by": a newer version superseded it) and "restored_at" (a
-- consolidation restore that sticks). The linked memories need not exist yet (an export
-- lists them oldest first, a successor after what it supersedes): links are kept as
-- exported, ids being kept.
-- p_paths (null items: plain memories) brings back files (a memory with a path; its
-- revisions come with memex.import_file_revisions) and p_actors (null items: the caller)
-- each memory's writer as exported (memex._check_imported_actor: not another agent's key):
-- both rewrite history, so items carrying either need
-- admin access to their tenant (the operator, or an admin key of the agent); plain items
-- need write access, as memex.store_many, or p_access when the caller asks for more
-- (memexdb's import passes 'admin': moving a user's memory is an admin operation).
-- A security definer (owned by memex_owner: row-level security still applies), so that
-- files and actors pass memex._guard_memories, which holds other writers to them.
-- Every item counts against the store rate limit (memex._enforce_rate_limit: a batch of N
-- memories costs N, counted per caller and per agent), or spends a reservation
-- (memex.reserve_rate_limit) the caller made for it before embedding.
create or replace function memex.import_memories(
    p_ids uuid[],
    p_agent_ids text[],
    p_user_ids text[],
    p_contents text[],
    p_embeddings vector[],
    p_embedding_model text,
    p_memory_types memex.memory_type[] default null,
    p_importances double precision[] default null,
    p_metadata jsonb[] default null,
    p_created_at timestamptz[] default null,
    p_updated_at timestamptz[] default null,
    p_expires_at timestamptz[] default null,
    p_lineage jsonb[] default null,
    p_paths text[] default null,
    p_actors text[] default null,
    p_access text default 'write'
)
returns setof memex.memory_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_agent text;
    v_user  text;
    v_items integer;
    v_need  text;
begin
    perform memex._check_memories(
        p_agent_ids, p_user_ids, p_contents, p_embeddings, p_embedding_model,
        array[cardinality(p_ids), cardinality(p_memory_types), cardinality(p_importances),
              cardinality(p_metadata), cardinality(p_created_at), cardinality(p_updated_at),
              cardinality(p_expires_at), cardinality(p_lineage), cardinality(p_paths),
              cardinality(p_actors)],
        p_importances, p_metadata);

    if p_access is null or p_access not in ('write', 'admin') then
        perform memex._invalid('access', 'must be write or admin');
    end if;
    for i in 1 .. coalesce(cardinality(p_paths), 0) loop
        if p_paths[i] is not null then
            perform memex._check_path(p_paths[i], format('memories[%s].path', i - 1));
        end if;
    end loop;
    for v_agent, v_user, v_need in
        select a, u, case when bool_or(p is not null or w is not null) then 'admin'
                          else p_access end
        from unnest(p_agent_ids, p_user_ids, p_paths, p_actors) t(a, u, p, w)
        group by a, u order by 1, 2 loop
        perform memex._authorize(v_agent, v_user, v_need);
    end loop;
    perform memex._check_imported_actor(a, w, format('memories[%s].actor', o - 1))
    from unnest(p_agent_ids, p_actors) with ordinality t(a, w, o)
    where w is not null order by o;
    for v_agent, v_items in select a, count(*)::integer from unnest(p_agent_ids) a
                            group by a order by a loop
        perform memex._enforce_rate_limit('store', v_agent, v_items);
    end loop;

    return query
    with items as (  -- an id given twice in the batch: the first one counts
        select distinct on (1) coalesce(p_ids[i.ord], gen_random_uuid()) as id, i.*
        from unnest(p_agent_ids, p_user_ids, p_contents, p_embeddings)
             with ordinality as i(agent_id, user_id, content, embedding, ord)
        order by 1, i.ord
    ),
    inserted as (
        insert into memex.memories as m
            (id, agent_id, user_id, memory_type, content, embedding, embedding_model,
             importance, metadata, expires_at, created_at, updated_at, source_ids,
             superseded_by, archived_at, path, actor, valid_from, valid_to, supersedes,
             superseded_at, restored_at)
        select it.id, it.agent_id, it.user_id,
               coalesce(p_memory_types[it.ord], 'episodic'), it.content, it.embedding,
               p_embedding_model, coalesce(p_importances[it.ord], 1.0),
               coalesce(p_metadata[it.ord], '{}'), p_expires_at[it.ord],
               coalesce(p_created_at[it.ord], now()),
               coalesce(p_updated_at[it.ord], now()),
               coalesce((select array_agg(s::uuid)
                         from jsonb_array_elements_text(p_lineage[it.ord] -> 'source_ids') s),
                        '{}'),
               (p_lineage[it.ord] ->> 'superseded_by')::uuid,
               (p_lineage[it.ord] ->> 'archived_at')::timestamptz,
               p_paths[it.ord], coalesce(p_actors[it.ord], memex._actor()),
               (p_lineage[it.ord] ->> 'valid_from')::timestamptz,
               (p_lineage[it.ord] ->> 'valid_to')::timestamptz,
               (select array_agg(s.id::uuid order by s.n)
                from jsonb_array_elements_text(p_lineage[it.ord] -> 'supersedes')
                     with ordinality s(id, n)),
               (p_lineage[it.ord] ->> 'superseded_at')::timestamptz,
               (p_lineage[it.ord] ->> 'restored_at')::timestamptz
        from items it
        order by it.ord
        on conflict do nothing  -- its id, or a file's path, exists already
        returning m.id, memex._memory_record(m) as record
    )
    select (ins.record).*
    from inserted ins join items it on it.id = ins.id
    order by it.ord;
    if p_access = 'admin' then
        -- memexdb's import: the revision 1 each new memory got (memex._memory_revision)
        -- says so; memex.import_memory_revisions replaces it with the exported history
        update memex.memory_revisions r set operation = 'import'
        where r.memory_id = any (p_ids) and r.revision = 1 and r.operation = 'store'
          and r.at >= now()  -- written by this transaction
          and not exists (select from memex.memory_revisions x
                          where x.memory_id = r.memory_id and x.revision = 2);
    end if;
end
$$;

comment on function memex.import_memories(uuid[], text[], text[], text[], vector[], text,
                                          memex.memory_type[], double precision[], jsonb[],
                                          timestamptz[], timestamptz[], timestamptz[],
                                          jsonb[], text[], text[], text) is
    'Insert exported memories keeping ids and timestamps; existing ids are skipped.';
