-- memex._enforce_rate_limit: apply the operator's per-minute limit for an operation
-- ('store': every write, 'search': every read), configured in memex.settings as
-- rate_limit_<op>_per_minute (null = unlimited). The limit is counted per caller: per API
-- key (however many agents it names), per bound SQL role, and per agent when the caller
-- has no key (open mode, the operator). Raises SQLSTATE MX429 with retry_after_seconds and
-- the operation in DETAIL (json). A security definer, so that callers need no access to
-- memex.rate_limits; memex._caller reads the binding of the session's login role first, so
-- a SQL role cannot choose whose counter it hits.
create or replace function memex._enforce_rate_limit(p_operation text, p_agent_id text)
returns void
language plpgsql
volatile
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
    v_limit   jsonb := memex._setting('rate_limit_' || p_operation || '_per_minute');
    v_caller  jsonb;
    v_subject text;
    v_result  memex.rate_limit_result;
begin
    if v_limit is null or jsonb_typeof(v_limit) <> 'number' then
        return;
    end if;
    v_caller := memex._caller();
    v_subject := case
        when v_caller ? 'key' then 'key:' || (v_caller ->> 'key')
        when (v_caller ->> 'actor') like 'role:%' then v_caller ->> 'actor'
        else 'agent:' || p_agent_id
    end;
    v_result := memex.rate_limit_hit(p_operation || ':' || v_subject, v_limit::integer, 60);
    if not v_result.allowed then
        raise exception 'rate limit exceeded: % % per minute for %', v_limit, p_operation,
                replace(v_subject, ':', ' ')
            using errcode = 'MX429',
                  detail = json_build_object(
                      'retry_after_seconds', v_result.retry_after_seconds,
                      'operation', p_operation)::text;
    end if;
end
$$;

comment on function memex._enforce_rate_limit(text, text) is
    'Raise MX429 when the caller (key, SQL role, or agent without a key) is over its limit.';
