-- privileges: service
-- memex._check_page_limit: raise MX422 `limit` ("must be 1 to 1000") unless p_limit is a
-- page size of the listings, 1 to 1000 rows: the one bound of memex.list_files,
-- list_revisions, access_events, audit_events, consolidation_history, dream_users,
-- agent_stats, user_stats and stale_embeddings, checked with their other arguments before
-- the caller is authorized (as memex._check_tenant is). Only the functions that call it
-- (security definers, or the service's) execute it.
create or replace function memex._check_page_limit(p_limit integer)
returns void
language plpgsql immutable set search_path = pg_catalog, pg_temp
as $$
begin
    if p_limit is null or p_limit not between 1 and 1000 then
        perform memex._invalid('limit', 'must be 1 to 1000');
    end if;
end
$$;

comment on function memex._check_page_limit(integer) is
    'Raise MX422 limit unless a listing''s page size is 1 to 1000.';
