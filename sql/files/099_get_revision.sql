-- privileges: tenant
-- memex.get_revision: one revision of a file of tenant (agent_id, user_id), with its
-- content (null for a delete). MX404 if the file has no such revision. Logged in the
-- access log ('read_revision').
create or replace function memex.get_revision(
    p_agent_id text,
    p_user_id text,
    p_path text,
    p_revision integer
)
returns memex.file_revisions
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_result memex.file_revisions;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._check_path(p_path);
    perform memex._check_revision(p_revision);
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    v_result := memex._revision_row(p_agent_id, p_user_id, p_path, p_revision);
    perform memex._log_access(p_agent_id, p_user_id, 'read_revision', p_path,
                              jsonb_build_object('revision', p_revision));
    return v_result;
end
$$;

comment on function memex.get_revision(text, text, text, integer) is
    'One revision of a file with its content; MX404 if absent.';
