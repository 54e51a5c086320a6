-- privileges: tenant
-- memex.embedding_dims: the dimension of memex.memories.embedding (vector(N)), read from
-- the catalog so that a migration changing the column needs no code change.
create or replace function memex.embedding_dims()
returns integer
language sql stable parallel safe set search_path = pg_catalog, pg_temp
as $$
    select a.atttypmod from pg_attribute a
    where a.attrelid = 'memex.memories'::regclass and a.attname = 'embedding'
$$;

comment on function memex.embedding_dims() is
    'Dimension of memex.memories.embedding, from its type modifier.';
