-- privileges: service
-- memex.set_dream_config: change consolidation settings (admin: the operator or an admin
-- key for every agent). p_changes holds some of the keys of memex.dream_config, each
-- checked (MX422 naming it); they are written to memex.settings as dream_<key> (audited
-- by its trigger). Returns the whole configuration.
create or replace function memex.set_dream_config(p_changes jsonb)
returns jsonb
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    -- key -> [min, max] (integers); enabled is a boolean
    v_bounds constant jsonb := '{"interval_seconds": [10, 86400], "grace_minutes": [0, 10080],
        "threshold": [10, 100000], "batch_size": [2, 1000], "summary_chars": [200, 32000],
        "write_budget": [1, 1000], "concurrency": [1, 64]}';
    v_key    text;
    v_value  jsonb;
begin
    perform memex._authorize(null, null, 'admin');
    if p_changes is null or jsonb_typeof(p_changes) <> 'object' then
        perform memex._invalid('config', 'must be a JSON object');
    end if;
    for v_key, v_value in select * from jsonb_each(p_changes) loop
        if v_key = 'enabled' then
            if jsonb_typeof(v_value) <> 'boolean' then
                perform memex._invalid('enabled', 'must be true or false');
            end if;
        elsif v_bounds ? v_key then
            if jsonb_typeof(v_value) <> 'number' or v_value::numeric <> trunc(v_value::numeric)
               or v_value::numeric not between (v_bounds -> v_key ->> 0)::numeric
                                           and (v_bounds -> v_key ->> 1)::numeric then
                perform memex._invalid(v_key, format('must be an integer from %s to %s',
                                                     v_bounds -> v_key ->> 0,
                                                     v_bounds -> v_key ->> 1));
            end if;
        else
            perform memex._invalid(v_key, 'is not a consolidation setting');
        end if;
        insert into memex.settings (name, value) values ('dream_' || v_key, v_value)
        on conflict (name) do update set value = excluded.value;
    end loop;
    return memex.dream_config();
end
$$;

comment on function memex.set_dream_config(jsonb) is
    'Change consolidation settings (checked, audited); returns the whole configuration.';
