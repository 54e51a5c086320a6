-- privileges: tenant-helper
-- memex._live_memories: memex._filtered_memories with one argument per filter
-- (p_include_archived and p_include_superseded false by default), for memex.count,
-- memex.list_memories, memex.get_memory and the writes: the filters' row passed on,
-- inlined into its callers, whose planner reads each field off the row (no row is built
-- per memory). A filter added to memex.search_filters is null here with no edit (a
-- parameter of memex._search_filters that this call leaves out) until these callers take
-- it.
-- No SET search_path on purpose (inlined); every name inside is schema-qualified.
create or replace function memex._live_memories(
    p_agent_id text,
    p_user_id text,
    p_memory_types memex.memory_type[],
    p_embedding_model text,
    p_now timestamptz,
    p_metadata jsonb default null,
    p_include_archived boolean default false,
    p_include_superseded boolean default false,
    p_as_of timestamptz default null,
    p_valid_at timestamptz default null,
    p_created_after timestamptz default null,
    p_created_before timestamptz default null
)
returns setof memex.memories
language sql stable parallel safe
as $$
    select m.* from memex._filtered_memories(
        p_agent_id, p_user_id, p_now, p_include_superseded,
        memex._search_filters(p_memory_types, p_embedding_model, p_metadata,
                              p_include_archived, p_as_of, p_valid_at, p_created_after,
                              p_created_before)) m
$$;

comment on function memex._live_memories(text, text, memex.memory_type[], text, timestamptz,
                                         jsonb, boolean, boolean, timestamptz, timestamptz,
                                         timestamptz, timestamptz) is
    'Live memories of a tenant: unarchived, unexpired at p_now, of the types, model and metadata given.';
