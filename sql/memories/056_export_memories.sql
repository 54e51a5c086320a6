-- privileges: tenant
-- memex.export_memories: one page of the unexpired memories of an agent's user (or of all
-- its users when p_user_id is null), oldest first per user (user_id, created_at, id),
-- with every field and, if p_include_embeddings, the embedding (null otherwise). Memories
-- consolidation archived are exported too, with their lineage (source_ids,
-- superseded_by, archived_at): an export holds everything, and an import restores it.
-- Time (issue 36): validity (valid_from, valid_to), supersession (supersedes,
-- superseded_by, superseded_at) and restored_at (a consolidation restore that sticks)
-- are exported as stored; the memories' revisions come with memex.export_history.
-- Files are memories with a path (their revisions and the access log come from
-- memex.export_history); actor is who wrote each memory. Keyset
-- paging: pass the (user_id, created_at, id) of the last row of a page as p_after_* (all
-- three or none). p_limit: 1 to 1000 (default 500).
create or replace function memex.export_memories(
    p_agent_id text,
    p_user_id text default null,
    p_include_embeddings boolean default false,
    p_after_user_id text default null,
    p_after_created_at timestamptz default null,
    p_after_id uuid default null,
    p_limit integer default 500,
    p_now timestamptz default null
)
returns table (
    id uuid,
    agent_id text,
    user_id text,
    memory_type memex.memory_type,
    content text,
    importance double precision,
    metadata jsonb,
    embedding_model text,
    created_at timestamptz,
    updated_at timestamptz,
    expires_at timestamptz,
    embedding vector,
    source_ids uuid[],
    superseded_by uuid,
    archived_at timestamptz,
    path text,
    actor text,
    valid_from timestamptz,
    valid_to timestamptz,
    supersedes uuid[],
    superseded_at timestamptz,
    restored_at timestamptz
)
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, coalesce(p_user_id, '-'));
    -- null user: every user of the agent, which a key limited to some users may not read
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    if p_limit is null or p_limit not between 1 and 1000 then
        perform memex._invalid('limit', 'must be between 1 and 1000');
    end if;
    if num_nonnulls(p_after_user_id, p_after_created_at, p_after_id) not in (0, 3) then
        perform memex._invalid('cursor', 'needs user_id, created_at and id of the last row');
    end if;
    return query
    select m.id, m.agent_id, m.user_id, m.memory_type, m.content, m.importance, m.metadata,
           m.embedding_model, m.created_at, m.updated_at, m.expires_at,
           case when p_include_embeddings then m.embedding::public.vector end,
           m.source_ids, m.superseded_by, m.archived_at, m.path, m.actor, m.valid_from,
           m.valid_to, m.supersedes, m.superseded_at, m.restored_at
    from memex.memories m
    where m.agent_id = p_agent_id
      and (p_user_id is null or m.user_id = p_user_id)
      and (m.expires_at is null or m.expires_at > coalesce(p_now, now()))
      and (p_after_id is null
           or (m.user_id, m.created_at, m.id) > (p_after_user_id, p_after_created_at, p_after_id))
    order by m.user_id, m.created_at, m.id
    limit p_limit;
end
$$;

comment on function memex.export_memories(text, text, boolean, text, timestamptz, uuid, integer,
                                          timestamptz) is
    'A page of an agent''s (or one user''s) memories, archived ones too, for export.';
