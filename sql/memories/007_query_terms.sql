-- privileges: tenant-helper
-- memex._query_terms: the distinct lexemes of a natural-language query under the
-- `english` text search configuration (stemmed, stop words dropped), for BM25 ranking.
-- Ranked retrieval matches ANY term (OR); websearch-style AND matching would drop every
-- memory that lacks one of the question's words.
create or replace function memex._query_terms(p_text text)
returns text[]
language sql immutable parallel safe set search_path = pg_catalog, pg_temp
as $$
    select coalesce(array_agg(t.lexeme order by t.lexeme), '{}')
    from unnest(to_tsvector('english'::regconfig, coalesce(p_text, ''))) t
$$;

comment on function memex._query_terms(text) is
    'Distinct english lexemes of a query (stemmed, without stop words).';
