-- privileges: service
-- memex._revision_row: revision p_revision of a file of tenant (agent_id, user_id), as
-- the caller may see it (row-level security), or SQLSTATE MX404 "file <path> has no
-- revision <n>". The one lookup of get_revision, diff_revisions and restore_revision
-- (security definers, which authorize their caller first).
create or replace function memex._revision_row(
    p_agent_id text, p_user_id text, p_path text, p_revision integer
)
returns memex.file_revisions
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_row memex.file_revisions;
begin
    select r.* into v_row from memex.file_revisions r
    where r.agent_id = p_agent_id and r.user_id = p_user_id and r.path = p_path
      and r.revision = p_revision;
    if v_row.id is null then
        raise exception 'file % has no revision %', p_path, p_revision using errcode = 'MX404';
    end if;
    return v_row;
end
$$;

comment on function memex._revision_row(text, text, text, integer) is
    'One revision of a file (under row-level security); MX404 if there is none.';
