-- memex.set_setting: write one operator setting of memex.settings (name -> jsonb) and
-- return the value stored. Operator only (memex._authorize(null, null, 'admin')). The
-- known names are checked, with their value's type and range (MX422 naming `value`,
-- or `name` for a name memexdb does not read); `vector_index` is refused here:
-- memex.configure_vector_index writes it after rebuilding the index. Each change is
-- audited by the settings trigger (memex._audit_settings); writing a value a setting
-- already has is not a change.
-- privileges: service
create or replace function memex.set_setting(p_name text, p_value jsonb)
returns jsonb
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
declare
    -- name -> [kind, least, greatest, nullable]; kind 'int' (a whole number) or 'num'
    v_rules constant jsonb := '{
        "exact_scan_max_rows":          ["int", 1, null, false],
        "index_batch_rows":             ["int", 1, null, false],
        "ann_candidates":               ["int", 1, null, false],
        "ann_recent_candidates":        ["int", 0, null, false],
        "hybrid_vector_weight":         ["num", 0, 1, false],
        "context_weight":               ["num", 0, 1, false],
        "rate_limit_store_per_minute":  ["int", 0, null, true],
        "rate_limit_search_per_minute": ["int", 0, null, true],
        "hnsw_ef_search":               ["int", 1, 1000, true],
        "ivfflat_probes":               ["int", 1, null, true],
        "access_log_retention_days":    ["int", 0, null, false],
        "request_lock_timeout_ms":      ["int", 0, null, false],
        "request_statement_timeout_ms": ["int", 0, null, false],
        "request_batch_item_ms":        ["int", 0, null, false]
    }';
    v_rule  jsonb;
    v_num   numeric;
begin
    perform memex._authorize(null, null, 'admin');
    if p_name = 'vector_index' then
        perform memex._invalid('name', 'vector_index is written by memex.configure_vector_index');
    end if;
    v_rule := v_rules -> p_name;
    if v_rule is null then
        perform memex._invalid('name', format('%s is not a setting memexdb reads', p_name));
    end if;
    if p_value is null or jsonb_typeof(p_value) = 'null' then
        if not (v_rule ->> 3)::boolean then
            perform memex._invalid('value', format('%s may not be null', p_name));
        end if;
        p_value := 'null';
    else
        if jsonb_typeof(p_value) <> 'number' then
            perform memex._invalid('value', format('%s must be a number', p_name));
        end if;
        v_num := p_value::text::numeric;
        if v_rule ->> 0 = 'int' and v_num <> trunc(v_num) then
            perform memex._invalid('value', format('%s must be a whole number', p_name));
        end if;
        if v_rule ->> 2 is null and v_num < (v_rule ->> 1)::numeric then
            perform memex._invalid('value', format('%s must be at least %s', p_name,
                v_rule ->> 1));
        end if;
        if v_num < (v_rule ->> 1)::numeric or v_num > (v_rule ->> 2)::numeric then
            perform memex._invalid('value', format('%s must be between %s and %s', p_name,
                v_rule ->> 1, v_rule ->> 2));
        end if;
    end if;
    insert into memex.settings as s (name, value) values (p_name, p_value)
    on conflict (name) do update set value = excluded.value, updated_at = now();
    return p_value;
end
$$;

comment on function memex.set_setting(text, jsonb) is
    'Write one operator setting (checked by name and value type); operator only, audited.';
