-- privileges: service
-- memex._dream_files: the files a dream over tenant (p_agent_id, p_user_id) reads, in path
-- order: those dreams read at all (memex._dream_reads: not the logs), and of them the ones
-- written since p_since (the tenant's last dream) by someone other than dream-agent; every
-- one when p_since is null (never dreamed) or p_force; and those at p_also (the paths a
-- model proposed edits for). Each with its newest revision and that revision's operation
-- (revision 0: a row a bound role inserted itself, with no revision yet). memex.dream_tenant
-- tidies these; memex.dream_plan shows them (all of a tenant's) to a model.
create or replace function memex._dream_files(
    p_agent_id text,
    p_user_id text,
    p_since timestamptz,
    p_force boolean,
    p_also text[] default '{}'
)
returns table (
    id uuid,
    path text,
    content text,
    embedding vector,
    embedding_model text,
    revision integer,
    operation text
)
language sql stable set search_path = pg_catalog, public, pg_temp
as $$
    select m.id, m.path, m.content, m.embedding::public.vector, m.embedding_model,
           coalesce(r.revision, 0), r.operation
    from memex.memories m
    left join lateral (
        select r.revision, r.operation from memex.file_revisions r
        where r.agent_id = m.agent_id and r.user_id = m.user_id and r.path = m.path
        order by r.revision desc limit 1) r on true
    where m.agent_id = p_agent_id and m.user_id = p_user_id and m.path is not null
      and memex._dream_reads(m.path)
      and (p_force or p_since is null or m.path = any (p_also)
           or (m.updated_at > p_since and m.actor is distinct from 'dream-agent'))
    order by m.path collate "C"
$$;

comment on function memex._dream_files(text, text, timestamptz, boolean, text[]) is
    'The files a dream over a tenant reads (written since its last dream), with revisions.';
