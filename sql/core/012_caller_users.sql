-- privileges: tenant-helper
-- memex._caller_users: the users the caller is limited to within its agent (null: all).
-- Called by the policies in a scalar subquery: an InitPlan of every reference to a tenant
-- table, evaluated at most once per statement and not at all for a caller of every tenant
-- (memex._caller_all decides first). PL/pgSQL, not inlined, as memex._caller_agent (an
-- inlined body held memex._caller's expression twice, compiled at the start of every
-- statement on a tenant table, twice: the policies name it twice). The JSON array becomes
-- a text[] as the user_ids field of a memex.sql_roles record (jsonb_populate_record's
-- conversion).
create or replace function memex._caller_users()
returns text[]
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
declare
    v_users jsonb := memex._caller() -> 'users';
begin
    if jsonb_typeof(v_users) = 'array' then
        return (jsonb_populate_record(null::memex.sql_roles,
                                      jsonb_build_object('user_ids', v_users))).user_ids;
    end if;
    return null;
end
$$;

comment on function memex._caller_users() is
    'The users the caller is limited to within its agent (null: all of them).';
