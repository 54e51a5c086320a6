-- privileges: tenant-helper
-- memex._recency: exponential decay exp(-ln2 / half_life * age_days); 1.0 at age 0,
-- 0.5 at one half-life. Future timestamps count as age 0. The exponent is floored at -700
-- (a weight of ~1e-304): exp() raises an underflow error below ~-745, and a memory
-- centuries older than a minutes-long half-life must still rank, last.
-- No SET search_path here on purpose: a SET clause stops the planner from inlining the
-- function, and it runs once per candidate row. Every name inside is schema-qualified.
create or replace function memex._recency(
    p_created_at timestamptz,
    p_now timestamptz,
    p_half_life_days double precision
)
returns double precision
language sql immutable parallel safe
as $$
    select pg_catalog.exp(greatest(
        -pg_catalog.ln(2.0::double precision) / p_half_life_days
        * greatest(
            pg_catalog.date_part('epoch', p_now operator(pg_catalog.-) p_created_at), 0
          ) / 86400.0,
        -700.0))
$$;

comment on function memex._recency(timestamptz, timestamptz, double precision) is
    'Recency weight exp(-ln2/half_life_days * age_days), clamped to 1 for future rows.';
