-- privileges: tenant
-- memex.list_revisions: the revisions of a file of tenant (agent_id, user_id), newest
-- first, p_limit (1 to 1000) at a time before revision p_before (null: from the newest);
-- without their content (memex.get_revision reads one). A deleted file's revisions are
-- listed too. Logged in the access log ('revisions').
create or replace function memex.list_revisions(
    p_agent_id text,
    p_user_id text,
    p_path text,
    p_limit integer default 50,
    p_before integer default null
)
returns setof memex.file_revisions
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._check_path(p_path);
    perform memex._check_page_limit(p_limit);
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    perform memex._log_access(p_agent_id, p_user_id, 'revisions', p_path);
    return query
        select r.id, r.agent_id, r.user_id, r.path, r.memory_id, r.revision, r.operation,
               r.actor, r.at, null::text, r.size, r.details
        from memex.file_revisions r
        where r.agent_id = p_agent_id and r.user_id = p_user_id and r.path = p_path
          and (p_before is null or r.revision < p_before)
        order by r.revision desc
        limit p_limit;
end
$$;

comment on function memex.list_revisions(text, text, text, integer, integer) is
    'A page of the revisions of a file, newest first, without content.';
