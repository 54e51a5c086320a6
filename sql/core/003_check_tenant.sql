-- privileges: tenant-helper
-- memex._check_tenant: validate the tenant key (agent_id, user_id) every public function takes.
create or replace function memex._check_tenant(p_agent_id text, p_user_id text)
returns void
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    if p_agent_id is null or length(p_agent_id) not between 1 and 128 then
        perform memex._invalid('agent_id', 'must be 1 to 128 characters');
    end if;
    if p_user_id is null or length(p_user_id) not between 1 and 128 then
        perform memex._invalid('user_id', 'must be 1 to 128 characters');
    end if;
end
$$;

comment on function memex._check_tenant(text, text) is
    'Raise MX422 unless agent_id and user_id are 1 to 128 characters.';
