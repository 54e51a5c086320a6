-- privileges: tenant
-- memex.store_queued: memex.store_many for callers that cannot run the embedding model
-- (direct SQL callers, e.g. the TypeScript client's direct mode): the memories go in
-- without their vector and are queued for the embed worker (memex._queue_embedding; the
-- service's worker, or any `memexdb` process that runs one, embeds them and stores the
-- vector with its model through memex.set_embeddings).
-- Until then a memory carries embedding_model 'memex:queued' and a stand-in vector (the
-- column cannot be null; a uniform unit vector: a zero vector has no cosine). A search
-- that names its embedding model (the service, the Python and TypeScript clients with an
-- embedder) therefore skips it until it is embedded; a text-mode search without a model
-- finds it at once. Arguments, checks, ids (a retried batch stores once), rate limit and
-- result as memex.store_many, p_supersedes (what each item replaces) included.
-- A security definer only to queue (memex._queue_embedding is
-- the service's): memex.store_many authorizes the caller (its binding follows
-- session_user) and row-level security applies to memex_owner, so the caller reaches no
-- other tenant; only memories this call stored with the stand-in model are queued.
-- As memorize-agent (the TypeScript direct client's memorize without an embedder,
-- memex._delegate) each memory gets its access-log entry (operation memorize, target its
-- id) in the same transaction, as memex.store's.
create or replace function memex.store_queued(
    p_agent_ids text[],
    p_user_ids text[],
    p_contents text[],
    p_memory_types memex.memory_type[] default null,
    p_importances double precision[] default null,
    p_metadata jsonb[] default null,
    p_expires_at timestamptz[] default null,
    p_created_at timestamptz[] default null,
    p_ids uuid[] default null,
    p_supersedes jsonb[] default null
)
returns setof memex.memory_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_model  constant text := 'memex:queued';
    v_dims   integer := memex.embedding_dims();
    v_stored memex.memory_record;
    v_delegated constant boolean := memex._actor() = 'memorize-agent';
begin
    for v_stored in
        select * from memex.store_many(
            p_agent_ids, p_user_ids, p_contents,
            array_fill(array_fill(1 / sqrt(v_dims), array[v_dims])::real[]::public.vector,
                       array[coalesce(cardinality(p_contents), 0)]),
            v_model, p_memory_types, p_importances, p_metadata, p_expires_at, p_created_at,
            p_ids, p_supersedes)
    loop
        if v_stored.embedding_model = v_model then  -- a repeat of an embedded one: as it is
            perform memex._queue_embedding(v_stored.id);
        end if;
        if v_delegated then
            perform memex._log_access(v_stored.agent_id, v_stored.user_id, 'memorize',
                                      v_stored.id::text);
        end if;
        return next v_stored;
    end loop;
end
$$;

comment on function memex.store_queued(text[], text[], text[], memex.memory_type[],
                                       double precision[], jsonb[], timestamptz[],
                                       timestamptz[], uuid[], jsonb[]) is
    'Store memories without their vectors (embedding_model memex:queued, a stand-in vector)'
    ' and queue them for the embed worker; otherwise as memex.store_many.';
