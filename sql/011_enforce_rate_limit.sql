-- memex._enforce_rate_limit: apply the operator's per-agent limit for an operation
-- ('store' or 'search'), configured in memex.settings as rate_limit_<op>_per_minute
-- (null = unlimited). Raises SQLSTATE MX429 with retry_after_seconds in DETAIL (json).
create or replace function memex._enforce_rate_limit(p_operation text, p_agent_id text)
returns void
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    v_limit  jsonb := memex._setting('rate_limit_' || p_operation || '_per_minute');
    v_result memex.rate_limit_result;
begin
    if v_limit is null or jsonb_typeof(v_limit) <> 'number' then
        return;
    end if;
    v_result := memex.rate_limit_hit(p_operation || ':' || p_agent_id, v_limit::integer, 60);
    if not v_result.allowed then
        raise exception 'rate limit exceeded: % % per minute for agent %',
                v_limit, p_operation, p_agent_id
            using errcode = 'MX429',
                  detail = json_build_object(
                      'retry_after_seconds', v_result.retry_after_seconds)::text;
    end if;
end
$$;

comment on function memex._enforce_rate_limit(text, text) is
    'Raise MX429 when the agent is over its configured per-minute limit for an operation.';
