-- privileges: tenant-helper
-- memex._live_memories: the memories of one tenant that search, count, list and get see:
-- not archived (consolidated), not expired at p_now, of the given types (null: all), made
-- by the given embedding model (null: any) and whose metadata contains p_metadata (null:
-- any); p_include_archived also keeps memories archived by consolidation (their summary
-- is live in their place). Memories superseded by a newer one (memex.store's p_supersedes,
-- superseded_at set) are left out likewise unless p_include_superseded. Issue 36's time
-- filters, each ignored when null: p_as_of keeps what the tenant's memory held at that
-- moment (created by then; not archived or superseded by then: archived_at / superseded_at
-- after it; the caller passes p_now = p_as_of for expiry); p_created_after (inclusive) and
-- p_created_before (exclusive) bound created_at; p_valid_at keeps the facts valid then
-- (valid_from, or created_at when null, <= p_valid_at < valid_to, or valid_to open). The one definition of a "live" memory, used by memex._candidates_exact,
-- memex._candidates_ann, memex.search's fast path, memex.count, memex.list_memories and
-- memex.get_memory.
-- No SET search_path on purpose: a SET clause stops the planner from inlining the
-- function into its callers' queries, and inlined it keeps their index scans (tenant
-- btree, HNSW, GIN). Every name inside is schema-qualified.
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
    select m.* from memex.memories m
    where m.agent_id operator(pg_catalog.=) p_agent_id
      and m.user_id operator(pg_catalog.=) p_user_id
      and (p_include_archived or m.archived_at is null
           or m.archived_at operator(pg_catalog.>) p_as_of)
      and (p_include_superseded or m.superseded_at is null
           or m.superseded_at operator(pg_catalog.>) p_as_of)
      and (p_as_of is null or m.created_at operator(pg_catalog.<=) p_as_of)
      and (p_created_after is null or m.created_at operator(pg_catalog.>=) p_created_after)
      and (p_created_before is null or m.created_at operator(pg_catalog.<) p_created_before)
      and (p_valid_at is null
           or (coalesce(m.valid_from, m.created_at) operator(pg_catalog.<=) p_valid_at
               and (m.valid_to is null or m.valid_to operator(pg_catalog.>) p_valid_at)))
      and (m.expires_at is null or m.expires_at operator(pg_catalog.>) p_now)
      and (p_memory_types is null or m.memory_type operator(pg_catalog.=) any (p_memory_types))
      and (p_embedding_model is null or m.embedding_model operator(pg_catalog.=) p_embedding_model)
      and (p_metadata is null or m.metadata operator(pg_catalog.@>) p_metadata)
$$;

comment on function memex._live_memories(text, text, memex.memory_type[], text, timestamptz,
                                         jsonb, boolean, boolean, timestamptz, timestamptz,
                                         timestamptz, timestamptz) is
    'Live memories of a tenant: unarchived, unexpired at p_now, of the types, model and metadata given.';
