-- memex.rate_limit_hit: count one hit against p_key under a sliding-window limit of
-- p_limit hits per p_window_seconds, and say whether it is allowed.
--
-- Sliding-window counter: the current fixed window's count plus the previous window's
-- count weighted by how much of it still overlaps the sliding window. One upsert does
-- the window roll-over, the check and the conditional increment; its row lock makes it
-- exact under concurrent connections (N racing hits against limit L admit exactly L).
-- Denied hits are not counted. Rows carry expires_at; memex.maintenance() prunes them.
create or replace function memex.rate_limit_hit(
    p_key text,
    p_limit integer,
    p_window_seconds double precision,
    p_now timestamptz default null
)
returns memex.rate_limit_result
language plpgsql
volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    v_now    timestamptz := coalesce(p_now, clock_timestamp());
    v_window interval;
    v_start  timestamptz;
    v_frac   double precision;
    v_row    memex.rate_limits;
    v_est    double precision;
    v_retry  double precision := 0;
    v_result memex.rate_limit_result;
begin
    if p_key is null or p_key = '' then
        perform memex._invalid('key', 'must be a non-empty string');
    end if;
    if p_limit is null or p_limit < 0 then
        perform memex._invalid('limit', 'must be >= 0');
    end if;
    if p_window_seconds is null or p_window_seconds <= 0 then
        perform memex._invalid('window_seconds', 'must be > 0');
    end if;

    v_window := make_interval(secs => p_window_seconds);
    v_start := to_timestamp(floor(extract(epoch from v_now) / p_window_seconds) * p_window_seconds);
    v_frac := extract(epoch from v_now - v_start) / p_window_seconds;

    insert into memex.rate_limits as r
        (key, window_seconds, window_start, current_count, previous_count, last_allowed,
         expires_at)
    values
        (p_key, p_window_seconds, v_start, least(p_limit, 1), 0, p_limit >= 1,
         v_start + 2 * v_window)
    on conflict (key) do update set
        (window_seconds, window_start, current_count, previous_count, last_allowed,
         expires_at) = (
            select p_window_seconds, v_start, w.cur + w.ok::integer, w.prev, w.ok,
                   v_start + 2 * v_window
            from (
                select c.cur, c.prev, c.prev * (1 - v_frac) + c.cur + 1 <= p_limit as ok
                from (
                    select case when r.window_start >= v_start then r.current_count
                                else 0 end as cur,
                           case when r.window_start >= v_start then r.previous_count
                                when r.window_start >= v_start - v_window then r.current_count
                                else 0 end as prev
                ) c
            ) w
        )
    returning r.* into v_row;

    v_est := v_row.previous_count * (1 - v_frac) + v_row.current_count;
    if not v_row.last_allowed then
        if v_row.current_count + 1 > p_limit then
            -- Wait for the next window, until this window's count has decayed enough.
            v_retry := (1 - v_frac) * p_window_seconds
                       + p_window_seconds
                         * greatest(0, 1 - (p_limit - 1)::double precision
                                           / greatest(v_row.current_count, 1));
        else
            -- Still in this window, once the previous window's share has decayed enough.
            v_retry := p_window_seconds
                       * (1 - (p_limit - 1 - v_row.current_count)::double precision
                              / v_row.previous_count)
                       - v_frac * p_window_seconds;
        end if;
    end if;

    v_result.allowed := v_row.last_allowed;
    v_result.hits := ceil(v_est)::integer;
    v_result.remaining := greatest(0, floor(p_limit - v_est))::integer;
    v_result.retry_after_seconds := greatest(v_retry, 0);
    return v_result;
end
$$;

comment on function memex.rate_limit_hit(text, integer, double precision, timestamptz) is
    'Sliding-window rate limiter: count a hit for key, return allowed/hits/remaining/retry_after.';
