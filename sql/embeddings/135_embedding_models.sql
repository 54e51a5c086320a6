-- privileges: service
-- memex.embedding_models: how many memories carry vectors of each embedding model
-- (every memory: archived and expired ones too), most first. A search compares only
-- vectors of its own model, so memories of another model are invisible to it until
-- `memexdb reembed` embeds them again. Operator only.
create or replace function memex.embedding_models()
returns table (embedding_model text, memories bigint)
language plpgsql stable set search_path = pg_catalog, pg_temp
as $$
begin
    perform memex._authorize(null, null, 'admin');
    return query
    select m.embedding_model, count(*)
    from memex.memories m
    group by m.embedding_model
    order by count(*) desc, m.embedding_model;
end
$$;

comment on function memex.embedding_models() is
    'Memories per embedding model (memexdb reembed, memexdb status).';
