-- privileges: tenant-helper
-- memex._caller_users: the users the caller is limited to within its agent (null: all).
-- Called by the policies in a scalar subquery: once per statement. Inlined there with
-- memex._caller (no SET, every name qualified; no subquery either, which inlining does
-- not take: the JSON array becomes a text[] as the user_ids field of a memex.sql_roles
-- record, jsonb_populate_record's conversion).
create or replace function memex._caller_users()
returns text[]
language sql stable
as $$
    select case
        when pg_catalog.jsonb_typeof(memex._caller() operator(pg_catalog.->) 'users')
             operator(pg_catalog.=) 'array'
        then (pg_catalog.jsonb_populate_record(
                  null::memex.sql_roles,
                  pg_catalog.jsonb_build_object(
                      'user_ids', memex._caller() operator(pg_catalog.->) 'users'))).user_ids
    end
$$;

comment on function memex._caller_users() is
    'The users the caller is limited to within its agent (null: all of them).';
