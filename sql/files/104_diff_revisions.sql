-- memex.diff_revisions: the unified diff from one revision of a file of tenant
-- (agent_id, user_id) to another, labelled `<path>@<revision>` (memex._unified_diff:
-- the text Python's difflib.unified_diff writes; empty when the two have the same
-- lines; a delete's revision counts as empty). Read access; MX404 if the file lacks
-- either revision. Logged in the access log once ('diff', with both revisions).
-- privileges: tenant
create or replace function memex.diff_revisions(
    p_agent_id text,
    p_user_id text,
    p_path text,
    p_from_revision integer,
    p_to_revision integer
)
returns text
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_old memex.file_revisions;
    v_new memex.file_revisions;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._check_path(p_path);
    perform memex._check_revision(p_from_revision, 'from_revision');
    perform memex._check_revision(p_to_revision, 'to_revision');
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    v_old := memex._revision_row(p_agent_id, p_user_id, p_path, p_from_revision);
    v_new := memex._revision_row(p_agent_id, p_user_id, p_path, p_to_revision);
    perform memex._log_access(p_agent_id, p_user_id, 'diff', p_path,
                              jsonb_build_object('from_revision', p_from_revision,
                                                 'to_revision', p_to_revision));
    return memex._unified_diff(v_old.content, v_new.content,
                               p_path || '@' || p_from_revision, p_path || '@' || p_to_revision);
end
$$;

comment on function memex.diff_revisions(text, text, text, integer, integer) is
    'Unified diff between two revisions of a file (as difflib writes it); MX404 if absent.';
