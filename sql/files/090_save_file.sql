-- privileges: service
-- memex._save_file: the one write path of files (memory_write, memory_patch,
-- restore): check the path, authorize a write, lock the file and check the base revision
-- (MX409 if it moved on), check the content and its embedding like memex.store's
-- (MX422), count against the agent's store rate limit, create or overwrite the file's
-- memories row (memory_type semantic, no expiry), append a revision (p_operation) and an
-- access-log entry, and return the file.
create or replace function memex._save_file(
    p_agent_id text,
    p_user_id text,
    p_path text,
    p_content text,
    p_embedding vector,
    p_embedding_model text,
    p_operation text,
    p_base_revision integer,
    p_details jsonb default '{}'
)
returns memex.file_record
language plpgsql volatile set search_path = pg_catalog, public, pg_temp
as $$
declare
    v_row      memex.memories;
    v_revision integer;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._check_path(p_path);
    if p_base_revision is not null and p_base_revision < 0 then
        perform memex._invalid('base_revision', 'must be 0 (a new file) or a revision number');
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    perform memex._lock_file(p_agent_id, p_user_id, p_path, p_base_revision);
    perform memex._check_memory(p_agent_id, p_user_id, p_content, p_embedding,
                                p_embedding_model, 1.0, '{}');
    perform memex._enforce_rate_limit('store', p_agent_id);

    update memex.memories m
    set content = p_content, embedding = p_embedding, embedding_model = p_embedding_model,
        updated_at = now(), actor = memex._actor()
    where m.agent_id = p_agent_id and m.user_id = p_user_id and m.path = p_path
    returning m.* into v_row;
    if v_row.id is null then
        insert into memex.memories (agent_id, user_id, path, memory_type, content, embedding,
                                    embedding_model, updated_at)
        values (p_agent_id, p_user_id, p_path, 'semantic', p_content, p_embedding,
                p_embedding_model, now())
        returning * into v_row;
    end if;
    v_revision := memex._record_revision(p_agent_id, p_user_id, p_path, v_row.id, p_operation,
                                         p_content, p_details);
    perform memex._log_access(p_agent_id, p_user_id, p_operation, p_path,
                              jsonb_build_object('revision', v_revision, 'size',
                                                 length(p_content)) || coalesce(p_details, '{}'));
    return memex._file_record(v_row, v_revision);
end
$$;

comment on function memex._save_file(text, text, text, text, vector, text, text, integer, jsonb) is
    'Create or overwrite a file (the write path of write, patch and restore), with its revision.';
