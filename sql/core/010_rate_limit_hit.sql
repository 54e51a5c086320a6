-- privileges: service
-- memex.rate_limit_hit: count p_hits hits (default 1) against p_key under a sliding-window
-- limit of p_limit hits per p_window_seconds, and say whether they are allowed.
--
-- Sliding-window counter: the current fixed window's count plus the previous window's
-- count weighted by how much of it still overlaps the sliding window. One upsert does
-- the window roll-over, the check and the conditional increment; its row lock makes it
-- exact under concurrent connections (N racing hits against limit L admit exactly L).
-- Hits are all or nothing (a batch of p_hits items is allowed whole or not at all), and
-- denied hits are not counted. Rows carry expires_at; memex.maintenance() prunes them.
create or replace function memex.rate_limit_hit(
    p_key text,
    p_limit integer,
    p_window_seconds double precision,
    p_now timestamptz default null,
    p_hits integer default 1
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
    if p_hits is null or p_hits < 1 then
        perform memex._invalid('hits', 'must be >= 1');
    end if;

    v_window := make_interval(secs => p_window_seconds);
    v_start := to_timestamp(floor(extract(epoch from v_now) / p_window_seconds) * p_window_seconds);
    v_frac := extract(epoch from v_now - v_start) / p_window_seconds;

    insert into memex.rate_limits as r
        (key, window_seconds, window_start, current_count, previous_count, last_allowed,
         expires_at)
    values
        (p_key, p_window_seconds, v_start, case when p_hits <= p_limit then p_hits else 0 end,
         0, p_hits <= p_limit,
         v_start + 2 * v_window)
    on conflict (key) do update set
        (window_seconds, window_start, current_count, previous_count, last_allowed,
         expires_at) = (
            select p_window_seconds, v_start, w.cur + w.ok::integer * p_hits, w.prev, w.ok,
                   v_start + 2 * v_window
            from (
                select c.cur, c.prev, c.prev * (1 - v_frac) + c.cur + p_hits <= p_limit as ok
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
        if p_hits > p_limit then
            -- Never: not even an empty window holds this many. Say so with a whole window.
            v_retry := p_window_seconds;
        elsif v_row.current_count + p_hits > p_limit then
            -- Wait for the next window, until this window's count has decayed enough.
            v_retry := (1 - v_frac) * p_window_seconds
                       + p_window_seconds
                         * greatest(0, 1 - (p_limit - p_hits)::double precision
                                           / greatest(v_row.current_count, 1));
        else
            -- Still in this window, once the previous window's share has decayed enough.
            v_retry := p_window_seconds
                       * (1 - (p_limit - p_hits - v_row.current_count)::double precision
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

comment on function memex.rate_limit_hit(text, integer, double precision, timestamptz, integer) is
    'Sliding-window rate limiter: count hits for key, return allowed/hits/remaining/retry_after.';
