-- privileges: tenant-helper
-- memex._valid_importance: the importance a memory ranks with (issue 36): its stored
-- importance, halved once the fact it states stopped holding (valid_to at or before
-- p_now, "now" or search's as_of) so that a fact valid now outranks an equally relevant
-- one that no longer holds; not an exclusion (p_valid_at filters instead, and then the
-- stored importance is used as is). Stored importance when valid_to is null.
-- No SET search_path on purpose (it would stop inlining; once per candidate row).
create or replace function memex._valid_importance(
    p_importance double precision,
    p_valid_to timestamptz,
    p_now timestamptz,
    p_valid_at timestamptz default null
)
returns double precision
language sql immutable parallel safe
as $$
    select case when p_valid_to operator(pg_catalog.<=) p_now and p_valid_at is null
                then p_importance operator(pg_catalog.*) 0.5
                else p_importance end
$$;

comment on function memex._valid_importance(double precision, timestamptz, timestamptz, timestamptz) is
    'Importance a memory ranks with: halved once its valid_to passed (unless p_valid_at filters).';
