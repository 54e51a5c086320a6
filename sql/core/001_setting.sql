-- privileges: tenant-helper
-- memex._setting: an operator setting from memex.settings, or the given default.
create or replace function memex._setting(p_name text, p_default jsonb default 'null')
returns jsonb
language sql stable parallel safe set search_path = pg_catalog, pg_temp
as $$
    select coalesce((select s.value from memex.settings s where s.name = p_name), p_default)
$$;

comment on function memex._setting(text, jsonb) is
    'Operator setting from memex.settings (jsonb), or p_default when unset.';
