-- privileges: tenant-helper
-- memex._memory_record: a memories row as the public memex.memory_record, the result of
-- memex.store, memex.store_many and memex.forget. The one place that lists its columns.
-- No SET search_path on purpose (it would stop inlining); no names to resolve inside.
create or replace function memex._memory_record(p_row memex.memories)
returns memex.memory_record
language sql immutable parallel safe
as $$
    select row(p_row.id, p_row.agent_id, p_row.user_id, p_row.memory_type, p_row.content,
               p_row.importance, p_row.metadata, p_row.embedding_model, p_row.created_at,
               p_row.updated_at, p_row.expires_at, p_row.source_ids, p_row.superseded_by,
               p_row.archived_at, p_row.valid_from, p_row.valid_to, p_row.superseded_at,
               p_row.supersedes)::memex.memory_record
$$;

comment on function memex._memory_record(memex.memories) is
    'A memories row as memex.memory_record (the public result of store and forget).';
