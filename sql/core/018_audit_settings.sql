-- privileges: service
-- memex._audit_settings: trigger on memex.settings: every change of an operator setting
-- (rate limits, index knobs...), whoever makes it (the service at start, memexdb, psql),
-- goes into memex.audit_log with the old and the new value. Writing a value a setting
-- already has is not a change.
create or replace function memex._audit_settings()
returns trigger
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
begin
    if tg_op = 'UPDATE' and old.value is not distinct from new.value then
        return null;
    end if;
    perform memex._audit('setting.set', null, null, jsonb_build_object(
        'name', new.name,
        'old', case when tg_op = 'UPDATE' then old.value end,
        'new', new.value));
    return null;
end
$$;

comment on function memex._audit_settings() is
    'Trigger: record each change of memex.settings in memex.audit_log.';

create or replace trigger settings_audit
    after insert or update on memex.settings
    for each row execute function memex._audit_settings();
