-- privileges: tenant-helper
-- memex._check_memory: validate one memory's fields before insert, naming the bad field
-- (SQLSTATE MX422) instead of surfacing a constraint name.
create or replace function memex._check_memory(
    p_agent_id text,
    p_user_id text,
    p_content text,
    p_embedding vector,
    p_embedding_model text,
    p_importance double precision,
    p_metadata jsonb
)
returns void
language plpgsql stable set search_path = pg_catalog, public, pg_temp
as $$
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_content is null or length(p_content) not between 1 and memex._content_max_chars() then
        perform memex._invalid('content', format('must be 1 to %s characters',
                                                  memex._content_max_chars()));
    end if;
    if btrim(p_content, E' \t\n\r\f\x0b') = '' then
        perform memex._invalid('content', 'must contain a non-whitespace character');
    end if;
    if p_embedding is null then
        perform memex._invalid('embedding', 'is required');
    end if;
    if vector_dims(p_embedding) <> memex.embedding_dims() then
        perform memex._invalid('embedding', format('must have %s dimensions, not %s',
                                                   memex.embedding_dims(),
                                                   vector_dims(p_embedding)));
    end if;
    if p_embedding_model is null or p_embedding_model = '' then
        perform memex._invalid('embedding_model', 'is required');
    end if;
    -- a positive importance below 1e-6 is refused (memexdb.memories.models.IMPORTANCE_MIN_POSITIVE):
    -- times a tiny relevance it would underflow the score (Postgres raises, not rounds)
    if p_importance is null or p_importance not between 0 and 2
       or (p_importance > 0 and p_importance < 1e-6) then
        perform memex._invalid('importance', 'must be 0 or between 0.000001 and 2');
    end if;
    perform memex._check_metadata(p_metadata);
end
$$;

comment on function memex._check_memory(text, text, text, vector, text, double precision,
                                        jsonb) is
    'Raise MX422 naming the first invalid field of a memory to store.';
