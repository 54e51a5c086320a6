-- privileges: tenant
-- memex.list_files (MCP memory_list): the files of tenant (agent_id, user_id) whose path
-- starts with p_prefix (null or '': all), in path order, p_limit (1 to 1000) at a time
-- after path p_after (the last path of the previous page). Sizes in characters, the
-- current revision and times; no content. Logged in the access log ('list').
create or replace function memex.list_files(
    p_agent_id text,
    p_user_id text,
    p_prefix text default null,
    p_limit integer default 50,
    p_after text default null
)
returns setof memex.file_entry
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_prefix is not null and (length(p_prefix) > 512 or p_prefix !~ '^[A-Za-z0-9._/-]*$') then
        perform memex._invalid('prefix', 'must be at most 512 characters of A-Z a-z 0-9 . _ - /');
    end if;
    perform memex._check_page_limit(p_limit);
    if p_after is not null then
        perform memex._check_path(p_after, 'after');
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    perform memex._log_access(p_agent_id, p_user_id, 'list', nullif(p_prefix, ''),
                              jsonb_strip_nulls(jsonb_build_object('after', p_after,
                                                                   'limit', p_limit)));
    return query
        select m.path, m.id,
               (select max(r.revision) from memex.file_revisions r
                where r.agent_id = m.agent_id and r.user_id = m.user_id and r.path = m.path),
               length(m.content), m.created_at, m.updated_at
        from memex.memories m
        where m.agent_id = p_agent_id and m.user_id = p_user_id and m.path is not null
          and (coalesce(p_prefix, '') = '' or starts_with(m.path, p_prefix))
          and (p_after is null or m.path > p_after collate "C")
        order by m.path collate "C"
        limit p_limit;
end
$$;

comment on function memex.list_files(text, text, text, integer, text) is
    'A page of a tenant''s files under a path prefix, in path order (no content).';
