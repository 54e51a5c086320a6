-- privileges: service
-- memex._holdings: what one user of an agent (p_user_id null: every user of the agent)
-- holds, for memex.agent_stats and memex.user_stats: live memories by type (files apart),
-- memories consolidation archived, expired memories not yet purged, files, and the newest
-- write. Runs with the caller's rights: row-level security applies.
create or replace function memex._holdings(
    p_agent_id text,
    p_user_id text,
    p_now timestamptz
)
returns table (
    episodic      bigint,
    semantic      bigint,
    procedural    bigint,
    archived      bigint,
    expired       bigint,
    files         bigint,
    last_write_at timestamptz
)
language sql stable set search_path = pg_catalog, pg_temp
as $$
    select count(*) filter (where m.path is null and m.archived_at is null
                              and m.memory_type = 'episodic' and not m.gone),
           count(*) filter (where m.path is null and m.archived_at is null
                              and m.memory_type = 'semantic' and not m.gone),
           count(*) filter (where m.path is null and m.archived_at is null
                              and m.memory_type = 'procedural' and not m.gone),
           count(*) filter (where m.path is null and m.archived_at is not null),
           count(*) filter (where m.path is null and m.archived_at is null and m.gone),
           count(*) filter (where m.path is not null),
           max(m.updated_at)
    from (select r.path, r.archived_at, r.memory_type, r.updated_at,
                 coalesce(r.expires_at <= p_now, false) as gone
          from memex.memories r
          where r.agent_id = p_agent_id
            and (p_user_id is null or r.user_id = p_user_id)) m
$$;

comment on function memex._holdings(text, text, timestamptz) is
    'Memories by type, archived, expired, files and newest write of a user or an agent.';
