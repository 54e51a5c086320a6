-- privileges: service
-- memex.rate_limit_hit: count p_hits hits (default 1) against p_key under a limit of
-- p_limit hits per p_window_seconds, and say whether they are allowed.
--
-- Exact sliding window: the key's row keeps the calls it admitted in the last window
-- (when, in epoch seconds, and how many hits each). A call is admitted when the hits
-- admitted in the window that ends now, plus its own, are at most p_limit; so every
-- window of p_window_seconds, wherever it starts, holds at most p_limit admitted hits
-- (the last call admitted in it saw all the others). The row lock (select ... for update)
-- makes it exact under concurrent connections (N racing hits against limit L admit
-- exactly L). Hits are all or nothing (a batch of p_hits items is allowed whole or not at
-- all), and denied hits are not counted. retry_after_seconds is exact: the time until
-- enough admitted hits have left the window (a whole window when p_hits > p_limit).
-- Rows carry expires_at; memex.maintenance() prunes them. p_now (default: the clock)
-- lets a caller or a test say when the hits happen.
create or replace function memex.rate_limit_hit(
    p_key text,
    p_limit integer,
    p_window_seconds double precision,
    p_now timestamptz default null,
    p_hits integer default 1
)
returns memex.rate_limit_result
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
declare
    v_now    timestamptz := coalesce(p_now, clock_timestamp());
    v_epoch  double precision;
    v_row    memex.rate_limits;
    v_at     double precision[];
    v_items  integer[];
    v_used   integer;
    v_ok     boolean;
    v_free   double precision;
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
    v_epoch := extract(epoch from v_now);

    loop  -- the key's row, locked (created empty the first time)
        select * into v_row from memex.rate_limits r where r.key = p_key for update;
        exit when found;
        insert into memex.rate_limits as r
            (key, window_seconds, last_allowed, expires_at, admitted_at, admitted_items)
        values (p_key, p_window_seconds, false, v_now, '{}', '{}')
        on conflict (key) do nothing;
    end loop;

    -- the calls admitted in the window that ends now, oldest first
    select coalesce(array_agg(u.at order by u.at, u.n), '{}'),
           coalesce(array_agg(u.items order by u.at, u.n), '{}'),
           coalesce(sum(u.items), 0)::integer
    into v_at, v_items, v_used
    from unnest(v_row.admitted_at, v_row.admitted_items) with ordinality u(at, items, n)
    where u.at > v_epoch - p_window_seconds;

    v_ok := v_used + p_hits <= p_limit;
    if v_ok then
        v_at := v_at || v_epoch;
        v_items := v_items || p_hits;
        v_used := v_used + p_hits;
    elsif p_hits > p_limit then
        -- Never: not even an empty window holds this many. Say so with a whole window.
        v_retry := p_window_seconds;
    else
        -- when the oldest admitted calls holding enough hits have left the window
        select min(c.at) into v_free
        from (select u.at, sum(u.items) over (order by u.at, u.n) as freed
              from unnest(v_at, v_items) with ordinality u(at, items, n)) c
        where c.freed >= v_used + p_hits - p_limit;
        v_retry := v_free + p_window_seconds - v_epoch;
    end if;

    update memex.rate_limits r
    set window_seconds = p_window_seconds,
        admitted_at = v_at,
        admitted_items = v_items,
        last_allowed = v_ok,
        expires_at = to_timestamp(coalesce(
            (select max(a) from unnest(v_at) a), v_epoch) + p_window_seconds)
    where r.key = p_key;

    v_result.allowed := v_ok;
    v_result.hits := v_used;
    v_result.remaining := greatest(0, p_limit - v_used);
    v_result.retry_after_seconds := greatest(v_retry, 0);
    return v_result;
end
$$;

comment on function memex.rate_limit_hit(text, integer, double precision, timestamptz, integer) is
    'Exact sliding-window rate limiter: count hits for key, return allowed/hits/remaining/retry_after.';
