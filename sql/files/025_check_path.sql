-- privileges: tenant-helper
-- memex._check_path: raise MX422 (naming p_field) unless p_path is a valid virtual path.
-- A path is relative, starts with one of the tenant's two prefixes, `user/` (the user's
-- own files) or `agent/` (the agent's notes kept for this user), and has 2 to 16
-- segments of 1 to 128 characters from [A-Za-z0-9._-] that do not start with a dot (so no
-- `.`, `..` or hidden segments), separated by single slashes; at most 512 characters.
-- Both prefixes are stored per tenant (agent_id, user_id): the virtual path is the
-- physical key within the tenant, and row-level security isolates it like any memory.
-- memexdb.files.models holds the same bounds (tests/test_params.py checks both sides).
create or replace function memex._check_path(p_path text, p_field text default 'path')
returns void
language plpgsql immutable set search_path = pg_catalog, pg_temp
as $$
declare
    v_segment text;
    v_depth   integer;
begin
    if p_path is null or length(p_path) not between 1 and 512 then
        perform memex._invalid(p_field, 'must be 1 to 512 characters');
    end if;
    if left(p_path, 1) = '/' then
        perform memex._invalid(p_field, 'must be relative (no leading /)');
    end if;
    if split_part(p_path, '/', 1) not in ('user', 'agent') then
        perform memex._invalid(p_field, 'must start with user/ or agent/');
    end if;
    v_depth := cardinality(string_to_array(p_path, '/'));
    if v_depth not between 2 and 16 then
        perform memex._invalid(p_field, 'must have 2 to 16 segments (user/<name> at least)');
    end if;
    foreach v_segment in array string_to_array(p_path, '/') loop
        if v_segment = '' then
            perform memex._invalid(p_field, 'must not have empty segments (// or a trailing /)');
        end if;
        if v_segment in ('.', '..') then
            perform memex._invalid(p_field, 'must not contain . or .. segments');
        end if;
        if left(v_segment, 1) = '.' then
            perform memex._invalid(p_field, 'must not have hidden segments (starting with .)');
        end if;
        if length(v_segment) > 128 then
            perform memex._invalid(p_field, 'segments must be at most 128 characters');
        end if;
        if v_segment !~ '^[A-Za-z0-9._-]+$' then
            perform memex._invalid(p_field, 'segments may only hold A-Z a-z 0-9 . _ -');
        end if;
    end loop;
end
$$;

comment on function memex._check_path(text, text) is
    'Raise MX422 unless the virtual path is user/... or agent/..., 2-16 safe segments, <= 512 chars.';
