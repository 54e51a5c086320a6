-- privileges: tenant
-- memex.write_file (MCP memory_write): create or overwrite the file at a virtual path of
-- tenant (agent_id, user_id) with p_content, embedded by the caller (p_embedding,
-- p_embedding_model). p_base_revision: the revision the caller's change was based on
-- (0: the file must not exist; null: overwrite whatever is there); a file that moved on is
-- SQLSTATE MX409. Keeps a revision ('write') and an access-log entry; returns the file.
create or replace function memex.write_file(
    p_agent_id text,
    p_user_id text,
    p_path text,
    p_content text,
    p_embedding vector,
    p_embedding_model text,
    p_base_revision integer default null
)
returns memex.file_record
language sql volatile security definer set search_path = pg_catalog, pg_temp
as $$
    select * from memex._save_file(p_agent_id, p_user_id, p_path, p_content, p_embedding,
                            p_embedding_model, 'write', p_base_revision)
$$;

comment on function memex.write_file(text, text, text, text, vector, text, integer) is
    'Create or overwrite a file of a tenant (MX409 if it moved past p_base_revision).';
