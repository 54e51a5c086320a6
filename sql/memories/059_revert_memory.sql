-- privileges: tenant
-- memex.revert_memory: restore what memory p_id of tenant (agent_id, user_id) said at
-- revision p_revision (issue 36): a new revision (operation 'revert') whose content,
-- memory_type, importance, metadata, valid_from and valid_to equal that revision's; its
-- expires_at too when it is still ahead (an expiry already passed is left as it is now:
-- restoring it would hide the memory). Supersession links and the archive state are not
-- reverted (memex.store's p_supersedes, forget and memex.restore_consolidation own them).
-- Revisions keep no embedding: when the content changes the memory keeps its current
-- vector as a stand-in and is queued for the embed worker (memex._queue_embedding), which
-- embeds the restored text. Write access, the store rate limit; MX404 if the memory or
-- the revision is not this tenant's; MX409 for a file (memex.restore_revision) or when
-- the memory says that already.
create or replace function memex.revert_memory(
    p_agent_id text,
    p_user_id text,
    p_id uuid,
    p_revision integer
)
returns memex.memory_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_row    memex.memories;
    v_old    memex.memory_revisions;
    v_result memex.memory_record;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    if p_revision is null or p_revision < 1 then
        perform memex._invalid('revision', 'must be a revision number (1 or more)');
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'write');
    select m.* into v_row from memex.memories m
    where m.id = p_id and m.agent_id = p_agent_id and m.user_id = p_user_id
    for update;
    if v_row.id is null then
        raise exception 'memory % not found', p_id using errcode = 'MX404';
    end if;
    if v_row.path is not null then
        raise exception using errcode = 'MX409',
            message = 'this memory is a file: restore its revisions with memory_restore';
    end if;
    v_old := memex._memory_revision_row(p_agent_id, p_user_id, p_id, p_revision);
    if (v_old.content, v_old.memory_type, v_old.importance, v_old.metadata, v_old.valid_from,
        v_old.valid_to)
       is not distinct from
       (v_row.content, v_row.memory_type, v_row.importance, v_row.metadata, v_row.valid_from,
        v_row.valid_to)
       and (v_old.expires_at is not distinct from v_row.expires_at
            or v_old.expires_at <= now()) then
        raise exception using errcode = 'MX409',
            message = format('memory %s says what revision %s said already', p_id, p_revision);
    end if;
    perform memex._enforce_rate_limit('store', p_agent_id);
    update memex.memories m
    set content = v_old.content,
        memory_type = v_old.memory_type,
        importance = v_old.importance,
        metadata = v_old.metadata,
        valid_from = v_old.valid_from,
        valid_to = v_old.valid_to,
        expires_at = case when v_old.expires_at is null or v_old.expires_at > now()
                          then v_old.expires_at else m.expires_at end,
        updated_at = now()
    where m.id = p_id
    returning (memex._memory_record(m)).* into v_result;
    update memex.memory_revisions r set operation = 'revert'
    where r.memory_id = p_id
      and r.revision = (select max(x.revision) from memex.memory_revisions x
                        where x.memory_id = p_id);
    if v_old.content <> v_row.content then
        perform memex._queue_embedding(p_id);
    end if;
    return v_result;
end
$$;

comment on function memex.revert_memory(text, text, uuid, integer) is
    'Restore a memory''s content and fields as of one of its revisions (a new revision).';
