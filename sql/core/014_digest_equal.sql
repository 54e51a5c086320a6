-- privileges: service
-- memex._digest_equal: compare two digests in time that does not depend on where they
-- first differ (every byte is compared), so a key check leaks no timing about the hash.
create or replace function memex._digest_equal(p_a bytea, p_b bytea)
returns boolean
language sql immutable strict set search_path = pg_catalog, pg_temp
as $$
    select length(p_a) = length(p_b)
       and coalesce(bit_or(get_byte(p_a, i) # get_byte(p_b, i)), 0) = 0
    from generate_series(0, least(length(p_a), length(p_b)) - 1) as i
$$;

comment on function memex._digest_equal(bytea, bytea) is
    'Constant-time equality of two digests.';
