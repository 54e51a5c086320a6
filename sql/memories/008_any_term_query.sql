-- privileges: tenant-helper
-- memex._any_term_query: a tsquery matching any of the given lexemes (from
-- memex._query_terms): 'a' | 'b' | ... Each lexeme is quoted as is, so it is neither
-- stemmed again nor parsed as an operator. Null for no terms.
create or replace function memex._any_term_query(p_terms text[])
returns tsquery
language sql immutable parallel safe set search_path = pg_catalog, pg_temp
as $$
    select case when cardinality(p_terms) > 0
                then array_to_string(array(select quote_literal(t) from unnest(p_terms) t),
                                     ' | ')::tsquery
           end
$$;

comment on function memex._any_term_query(text[]) is
    'tsquery matching any of the given lexemes (OR), or null for none.';
