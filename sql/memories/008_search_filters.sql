-- privileges: tenant-helper
-- memex._search_filters: a memex.search_filters (revision 0035) from its attributes by
-- name, each one left out null: memex._search_filters(p_metadata => ..., p_as_of => ...).
-- Its parameters are the type's attributes, in their order, each `p_<attribute>` of the
-- attribute's type `default null`: this file writes the function from the catalog
-- (pg_attribute) on every migrate, so a filter added to the type (`alter type
-- memex.search_filters add attribute`, in a revision) is a parameter here with no edit,
-- and a caller that does not take it (memex._live_memories, which passes the first
-- eight) is not edited either. The revision that adds the attribute drops the older form
-- (memex._search_filters of the old attributes' types), as it drops memex.search's old
-- signature: both would match a call, and migrate stops there.
-- No SET search_path on purpose: one expression, inlined into its callers, so a field of
-- the row it builds folds to the argument (memex.search's generic plan reads the parameter
-- itself, not a field of a row per memory). Stable, not immutable, though it reads
-- nothing: the planner would run an immutable function of constant arguments (a custom
-- plan of memex.count, list_memories, get_memory) as a statement of its own at each
-- planning instead of inlining it. Every name inside is schema-qualified.
do $do$
declare
    v_attributes text;  -- the parameters' types, as the function's identity
    v_parameters text;
    v_values     text;
begin
    select string_agg(format_type(a.atttypid, a.atttypmod), ', ' order by a.attnum),
           string_agg(format('%I %s default null', 'p_' || a.attname,
                             format_type(a.atttypid, a.atttypmod)), ', ' order by a.attnum),
           string_agg(quote_ident('p_' || a.attname), ', ' order by a.attnum)
    into v_attributes, v_parameters, v_values
    from pg_catalog.pg_attribute a
    where a.attrelid = (select t.typrelid from pg_catalog.pg_type t
                        where t.oid = 'memex.search_filters'::regtype)
      and a.attnum > 0 and not a.attisdropped;
    execute format($function$
create or replace function memex._search_filters(%s)
returns memex.search_filters
language sql stable parallel safe
as $$
    select row(%s)::memex.search_filters
$$
$function$, v_parameters, v_values);
    execute format('comment on function memex._search_filters(%s) is %L', v_attributes,
                   'The filters of a search from their names (memex.search_filters), each'
                   ' one not given null.');
end
$do$;
