-- privileges: tenant-helper
-- memex._filtered_memories: the memories of one tenant that search, count, list and get
-- see:
-- not expired at p_now, not superseded by a newer one (memex.store's p_supersedes,
-- superseded_at set) unless p_include_superseded, and of the filters p_filters
-- (memex.search_filters, revision 0035: built once by memex.search, passed on unchanged by
-- its helpers; each filter ignored when null): of the given memory_types, made by the
-- given embedding_model, whose metadata contains metadata; not archived by consolidation
-- (their summary is live in their place) unless include_archived. Issue 36's time
-- filters: as_of keeps what the tenant's memory held at that moment (created by then; not
-- archived or superseded by then: archived_at / superseded_at after it; the caller passes
-- p_now = as_of for expiry); created_after (inclusive) and created_before (exclusive) bound
-- created_at; valid_at keeps the facts valid then (valid_from, or created_at when null,
-- <= valid_at < valid_to, or valid_to open).
-- The one definition of a "live" memory and the one place a search filter is applied:
-- memex._candidates_exact, memex._candidates_ann, memex._supersession_heads and
-- memex.search's fast path read it; memex._live_memories (one argument per filter) serves
-- memex.count, memex.list_memories, memex.get_memory and the writes.
-- No SET search_path on purpose: a SET clause stops the planner from inlining the
-- function into its callers' queries, and inlined it keeps their index scans (tenant
-- btree, HNSW, GIN); a caller planned for its values (a custom plan) sees each filter as
-- a constant (a field of a constant folds). Every name inside is schema-qualified.
create or replace function memex._filtered_memories(
    p_agent_id text,
    p_user_id text,
    p_now timestamptz,
    p_include_superseded boolean,
    p_filters memex.search_filters
)
returns setof memex.memories
language sql stable parallel safe
as $$
    select m.* from memex.memories m
    where m.agent_id operator(pg_catalog.=) p_agent_id
      and m.user_id operator(pg_catalog.=) p_user_id
      and (coalesce((p_filters).include_archived, false) or m.archived_at is null
           or m.archived_at operator(pg_catalog.>) (p_filters).as_of)
      and (p_include_superseded or m.superseded_at is null
           or m.superseded_at operator(pg_catalog.>) (p_filters).as_of)
      and ((p_filters).as_of is null
           or m.created_at operator(pg_catalog.<=) (p_filters).as_of)
      and ((p_filters).created_after is null
           or m.created_at operator(pg_catalog.>=) (p_filters).created_after)
      and ((p_filters).created_before is null
           or m.created_at operator(pg_catalog.<) (p_filters).created_before)
      and ((p_filters).valid_at is null
           or (coalesce(m.valid_from, m.created_at) operator(pg_catalog.<=) (p_filters).valid_at
               and (m.valid_to is null
                    or m.valid_to operator(pg_catalog.>) (p_filters).valid_at)))
      and (m.expires_at is null or m.expires_at operator(pg_catalog.>) p_now)
      and ((p_filters).memory_types is null
           or m.memory_type operator(pg_catalog.=) any ((p_filters).memory_types))
      and ((p_filters).embedding_model is null
           or m.embedding_model operator(pg_catalog.=) (p_filters).embedding_model)
      and ((p_filters).metadata is null
           or m.metadata operator(pg_catalog.@>) (p_filters).metadata)
$$;

comment on function memex._filtered_memories(text, text, timestamptz, boolean,
                                             memex.search_filters) is
    'Live memories of a tenant: unexpired at p_now, of the search filters given.';
