-- privileges: tenant-helper
-- memex._caller_users: the users the caller is limited to within its agent (null: all).
-- Called by the policies in a scalar subquery: once per statement.
create or replace function memex._caller_users()
returns text[]
language sql stable set search_path = pg_catalog, pg_temp
as $$
    select array(select jsonb_array_elements_text(c -> 'users'))
    from memex._caller() c
    where jsonb_typeof(c -> 'users') = 'array'
$$;

comment on function memex._caller_users() is
    'The users the caller is limited to within its agent (null: all of them).';
