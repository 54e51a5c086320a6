-- privileges: tenant
-- memex.diff_memory_revisions: what changed in memory p_id of tenant (agent_id, user_id)
-- from revision p_from_revision to p_to_revision (issue 36): {"content": the unified diff
-- of the content labelled `<id>@<revision>` (memex._unified_diff, as memex.diff_revisions
-- for files, each content ending with a line end: a one-line memory's change reads as a
-- removed line and an added one; empty when the lines are the same), "fields": {field: {"from": ..., "to":
-- ...}} for each other field that differs (memory_type, importance, metadata, expires_at,
-- valid_from, valid_to, supersedes, superseded_by, superseded_at, archived_at)}.
-- Read access; MX404 if the memory lacks either revision.
create or replace function memex.diff_memory_revisions(
    p_agent_id text,
    p_user_id text,
    p_id uuid,
    p_from_revision integer,
    p_to_revision integer
)
returns jsonb
language plpgsql stable security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_old    memex.memory_revisions;
    v_new    memex.memory_revisions;
    v_fields jsonb;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_from_revision is null or p_from_revision < 1 then
        perform memex._invalid('from_revision', 'must be a revision number (1 or more)');
    end if;
    if p_to_revision is null or p_to_revision < 1 then
        perform memex._invalid('to_revision', 'must be a revision number (1 or more)');
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    v_old := memex._memory_revision_row(p_agent_id, p_user_id, p_id, p_from_revision);
    v_new := memex._memory_revision_row(p_agent_id, p_user_id, p_id, p_to_revision);
    select coalesce(jsonb_object_agg(o.key, jsonb_build_object('from', o.value, 'to', n.value)),
                    '{}')
    into v_fields
    from jsonb_each(to_jsonb(v_old) - '{id,agent_id,user_id,memory_id,revision,operation,changed,actor,at,content,details}'::text[]) o
    join jsonb_each(to_jsonb(v_new)) n on n.key = o.key
    where o.value is distinct from n.value;
    return jsonb_build_object(
        'content', memex._unified_diff(
                       -- a memory is text, not a file: each content read as ending with
                       -- a line end, so a one-line memory's change is two lines of the
                       -- diff (difflib runs a last line without one into the next)
                       case when v_old.content ~ '[\n\r]$' then v_old.content
                            else v_old.content || E'\n' end,
                       case when v_new.content ~ '[\n\r]$' then v_new.content
                            else v_new.content || E'\n' end,
                       p_id || '@' || p_from_revision,
                       p_id || '@' || p_to_revision),
        'fields', v_fields);
end
$$;

comment on function memex.diff_memory_revisions(text, text, uuid, integer, integer) is
    'What changed between two revisions of a memory: content diff and other fields.';
