-- privileges: tenant
-- memex.patch_file (MCP memory_patch): apply the patch (memex._apply_patch) to the file's
-- current content under the file's lock and store it with p_embedding, the caller's
-- embedding of the patched content. p_base_revision: the revision the patch was based on
-- (the caller passes the one preview_patch returned, so the embedding matches what is
-- stored); a file that moved on is MX409. Appending to a file that does not exist
-- creates it; replacing in one is MX404.
create or replace function memex.patch_file(
    p_agent_id text,
    p_user_id text,
    p_path text,
    p_embedding vector,
    p_embedding_model text,
    p_base_revision integer,
    p_heading text default null,
    p_append text default null,
    p_old_text text default null,
    p_new_text text default null
)
returns memex.file_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_current text;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._check_path(p_path);
    if p_base_revision is null then
        perform memex._invalid('base_revision', 'is required (memex.preview_patch returns it)');
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    perform memex._lock_file(p_agent_id, p_user_id, p_path, p_base_revision);
    select m.content into v_current from memex.memories m
    where m.agent_id = p_agent_id and m.user_id = p_user_id and m.path = p_path;
    return memex._save_file(
        p_agent_id, p_user_id, p_path,
        memex._apply_patch(v_current, p_heading, p_append, p_old_text, p_new_text),
        p_embedding, p_embedding_model, 'patch', p_base_revision,
        jsonb_build_object('patch', case when p_old_text is null then 'append' else 'replace' end));
end
$$;

comment on function memex.patch_file(text, text, text, vector, text, integer, text, text, text,
                                     text) is
    'Append under a heading or replace one exact text of a file (MX409 if it moved on).';
