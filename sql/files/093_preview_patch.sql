-- privileges: tenant
-- memex.preview_patch: what memex.patch_file would make of a file now (its current
-- revision, 0 if absent, and the patched content), so that the caller can embed the new
-- content before patching. Needs write access; changes and logs nothing.
create or replace function memex.preview_patch(
    p_agent_id text,
    p_user_id text,
    p_path text,
    p_heading text default null,
    p_append text default null,
    p_old_text text default null,
    p_new_text text default null,
    out revision integer,
    out content text
)
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_current text;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._check_path(p_path);
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    select m.content into v_current from memex.memories m
    where m.agent_id = p_agent_id and m.user_id = p_user_id and m.path = p_path;
    revision := case when v_current is null then 0
                     else (memex._file_revision(p_agent_id, p_user_id, p_path)).revision end;
    content := memex._apply_patch(v_current, p_heading, p_append, p_old_text, p_new_text);
end
$$;

comment on function memex.preview_patch(text, text, text, text, text, text, text) is
    'The current revision of a file and its content after a patch (nothing is written).';
