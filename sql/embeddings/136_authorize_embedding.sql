-- privileges: service
-- memex._authorize_embedding: may the caller have texts embedded by the service's model
-- (POST /v1/embeddings)? Any caller the service entered: a valid API key of any access
-- (embedding a text reads nothing stored, so read access is enough; the scope does not
-- matter) or the open mode of a loopback service without keys; SQLSTATE 28000 without
-- one. It costs what a search's query embedding costs, so it counts as a read against
-- the caller's rate_limit_search_per_minute: the key's counter and its agent's (callers
-- without a key, and operator keys, are counted by who they are).
create or replace function memex._authorize_embedding()
returns void
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
begin
    if coalesce(memex._caller() ->> 'access', 'none') = 'none' then
        raise exception 'no caller: authenticate with an API key' using errcode = '28000';
    end if;
    perform memex._enforce_rate_limit('search', null);
end
$$;

comment on function memex._authorize_embedding() is
    'Raise 28000 without a caller; count an embedding request against the read limit.';
