-- privileges: tenant-helper
-- memex._file_revision: the newest revision number of a file of a tenant (0: never
-- written) and whether the file exists now. Callers that write take the file's advisory
-- lock first (memex._lock_file), so the number cannot move under them.
create or replace function memex._file_revision(
    p_agent_id text, p_user_id text, p_path text, out revision integer, out live boolean
)
language sql stable set search_path = pg_catalog, pg_temp
as $$
    select coalesce(max(r.revision), 0),
           exists (select from memex.memories m
                   where m.agent_id = p_agent_id and m.user_id = p_user_id and m.path = p_path)
    from memex.file_revisions r
    where r.agent_id = p_agent_id and r.user_id = p_user_id and r.path = p_path
$$;

comment on function memex._file_revision(text, text, text) is
    'Newest revision number of a file (0 if never written) and whether it exists now.';
