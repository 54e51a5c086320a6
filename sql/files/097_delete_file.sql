-- privileges: tenant
-- memex.delete_file (MCP memory_delete): delete the file at a virtual path of tenant
-- (agent_id, user_id) and return it as it was, with the number of the 'delete' revision
-- that records the deletion (its earlier revisions stay: memex.restore_revision brings it
-- back). p_base_revision as in memex.write_file (MX409 if the file moved on); MX404 if
-- there is no such file. Logged in the access log.
create or replace function memex.delete_file(
    p_agent_id text,
    p_user_id text,
    p_path text,
    p_base_revision integer default null
)
returns memex.file_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_row      memex.memories;
    v_revision integer;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._check_path(p_path);
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    perform memex._lock_file(p_agent_id, p_user_id, p_path, p_base_revision);
    perform memex._enforce_rate_limit('store', p_agent_id);
    delete from memex.memories m
    where m.agent_id = p_agent_id and m.user_id = p_user_id and m.path = p_path
    returning m.* into v_row;
    if v_row.id is null then
        raise exception 'file % not found', p_path using errcode = 'MX404';
    end if;
    v_revision := memex._record_revision(p_agent_id, p_user_id, p_path, v_row.id, 'delete', null);
    perform memex._log_access(p_agent_id, p_user_id, 'delete', p_path,
                              jsonb_build_object('revision', v_revision));
    return memex._file_record(v_row, v_revision);
end
$$;

comment on function memex.delete_file(text, text, text, integer) is
    'Delete a file of a tenant, keeping its revisions (a delete revision is added).';
