-- privileges: service
-- memex._record_revision: append a revision of a file (actor = the caller) and return its
-- number (the next after the file's newest). A security definer: callers read their
-- revisions but cannot forge one (only erasure deletes them). Row-level security still
-- applies (forced): the caller must be able to write the tenant.
create or replace function memex._record_revision(
    p_agent_id text, p_user_id text, p_path text, p_memory_id uuid, p_operation text,
    p_content text, p_details jsonb default '{}'
)
returns integer
language sql volatile security definer set search_path = pg_catalog, pg_temp
as $$
    insert into memex.file_revisions
        (agent_id, user_id, path, memory_id, revision, operation, actor, content, size, details)
    select p_agent_id, p_user_id, p_path, p_memory_id,
           (memex._file_revision(p_agent_id, p_user_id, p_path)).revision + 1,
           p_operation, memex._actor(), p_content, coalesce(length(p_content), 0),
           coalesce(p_details, '{}') || memex._on_behalf_of()
    returning revision
$$;

comment on function memex._record_revision(text, text, text, uuid, text, text, jsonb) is
    'Append the next revision of a file (actor = the caller); returns its number.';
