-- privileges: tenant
-- memex.restore_revision: make revision p_revision of a file its current content again
-- (also for a deleted file), as a new 'restore' revision; the caller embeds that content
-- (memex.get_revision reads it). p_base_revision as in memex.write_file (MX409 if the
-- file moved on). MX404 if there is no such revision; MX409 if it is a delete.
create or replace function memex.restore_revision(
    p_agent_id text,
    p_user_id text,
    p_path text,
    p_revision integer,
    p_embedding vector,
    p_embedding_model text,
    p_base_revision integer default null
)
returns memex.file_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_old memex.file_revisions;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._check_path(p_path);
    perform memex._check_revision(p_revision);
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    v_old := memex._revision_row(p_agent_id, p_user_id, p_path, p_revision);
    if v_old.operation = 'delete' then
        raise exception 'revision % of % is a delete; restore an earlier one', p_revision, p_path
            using errcode = 'MX409';
    end if;
    return memex._save_file(p_agent_id, p_user_id, p_path, v_old.content, p_embedding,
                            p_embedding_model, 'restore', p_base_revision,
                            jsonb_build_object('restored', p_revision));
end
$$;

comment on function memex.restore_revision(text, text, text, integer, vector, text, integer) is
    'Make an earlier revision of a file current again, as a new restore revision.';
