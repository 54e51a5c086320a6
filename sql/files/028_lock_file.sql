-- privileges: service
-- memex._lock_file: serialize writers of one file (until the transaction ends) and check
-- the revision a write was based on: p_base_revision null accepts any; 0 means the file
-- must not exist; n means its current revision must be n. A file that moved on raises
-- SQLSTATE MX409 (HTTP 409) with the current revision in DETAIL. Returns the current
-- revision (0 when the file does not exist).
create or replace function memex._lock_file(
    p_agent_id text, p_user_id text, p_path text, p_base_revision integer
)
returns integer
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
declare
    v_state   record;
    v_current integer;
begin
    perform pg_advisory_xact_lock(
        memex._lock_key('file', jsonb_build_array(p_agent_id, p_user_id, p_path)::text));
    v_state := memex._file_revision(p_agent_id, p_user_id, p_path);
    v_current := case when v_state.live then v_state.revision else 0 end;
    if p_base_revision is not null and p_base_revision <> v_current then
        raise exception 'file % is at revision %, not %', p_path, v_current, p_base_revision
            using errcode = 'MX409',
                  detail = jsonb_build_object('current_revision', v_current)::text,
                  hint = 'Read the file again and apply the change to its current content.';
    end if;
    return v_current;
end
$$;

comment on function memex._lock_file(text, text, text, integer) is
    'Lock a file for writing; MX409 unless it is at the base revision given (0: absent).';
