-- privileges: tenant-helper
-- memex._authorize: raise unless the caller may act on tenant (agent_id, user_id) with
-- p_need access ('read', 'write' or 'admin'). Every public tenant function calls it first:
-- row-level security would return nothing for another tenant; this says why, as
-- SQLSTATE 28000 (no caller: 401) or 42501 (not this tenant, or too little access: 403).
-- A null agent/user means "any tenant" (operator calls): only callers of every tenant pass.
create or replace function memex._authorize(p_agent_id text, p_user_id text, p_need text)
returns jsonb
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_caller jsonb := memex._caller();
    v_access text := v_caller ->> 'access';
    v_rank   constant jsonb := '{"none": 0, "read": 1, "write": 2, "admin": 3}';
begin
    if v_access is null or v_access = 'none' then
        raise exception 'no caller: authenticate with an API key'
            using errcode = '28000',
                  hint = 'The service sets the caller per transaction with memex._enter; '
                         'SQL callers log in as a role bound with memex.bind_sql_role.';
    end if;
    if not coalesce((v_caller ->> 'all')::boolean, false) then
        if p_agent_id is null or p_agent_id is distinct from v_caller ->> 'agent' then
            raise exception 'this key may not access agent %', coalesce(p_agent_id, '(all)')
                using errcode = '42501';
        end if;
    end if;
    -- too little access first: a read key limited to users that lists keys (user null)
    -- lacks admin access, whichever users it may read
    if (v_rank ->> v_access)::integer < (v_rank ->> p_need)::integer then
        raise exception 'this key has % access; % access is needed', v_access, p_need
            using errcode = '42501';
    end if;
    if not coalesce((v_caller ->> 'all')::boolean, false)
       and jsonb_typeof(v_caller -> 'users') = 'array'
       and (p_user_id is null or not (v_caller -> 'users') ? p_user_id) then
        raise exception 'this key may not access user % of agent %',
                coalesce(p_user_id, '(all)'), p_agent_id
            using errcode = '42501';
    end if;
    return v_caller;
end
$$;

comment on function memex._authorize(text, text, text) is
    'Raise 28000/42501 unless the caller may act on the tenant with the access needed.';
