-- privileges: service
-- memex._guard_memories: what a caller writing memex.memories directly (plain SQL as the
-- service's memex_app: tenant roles hold no table privileges) may not do, whatever
-- row-level security lets through:
--   - set `actor`: it is always the caller (memex._actor()) on insert, and on an update
--     that changes what the memory says; an update that only re-embeds it (the embed
--     worker) keeps the writer it had;
--   - create, delete, move or rewrite a file (a row with a path): files change only
--     through memex.write_file, patch_file, delete_file and restore_revision, which record
--     the revision in the same transaction (SQLSTATE 42501 otherwise). A file's importance,
--     metadata and type may still change (memex.update_memory).
-- memexdb's own security definer functions (owned by memex_owner: the tenant API, e.g.
-- memex.store sets the actor by default and memex.update_memory and memex.forget refuse
-- files themselves) and the operator's roles (members of memex_owner) keep their
-- revisions and actors themselves: they pass.
create or replace function memex._guard_memories()
returns trigger
language plpgsql volatile set search_path = pg_catalog, pg_temp
as $$
begin
    if current_user = 'memex_owner' or pg_has_role(current_user, 'memex_owner', 'usage') then
        return case when tg_op = 'DELETE' then old else new end;
    end if;
    if (tg_op <> 'INSERT' and old.path is not null)
       or (tg_op <> 'DELETE' and new.path is not null) then
        if tg_op <> 'UPDATE' or new.path is distinct from old.path
           or new.content is distinct from old.content or new.agent_id <> old.agent_id
           or new.user_id <> old.user_id then
            raise exception 'files change only through memex.write_file, memex.patch_file, '
                            'memex.delete_file and memex.restore_revision'
                using errcode = '42501',
                      hint = 'They keep a revision of every change of a file.';
        end if;
    end if;
    if tg_op = 'DELETE' then
        return old;
    end if;
    if tg_op = 'INSERT'
       or (new.content, new.importance, new.metadata, new.memory_type, new.expires_at,
           new.archived_at, new.superseded_by, new.agent_id, new.user_id)
          is distinct from (old.content, old.importance, old.metadata, old.memory_type,
                            old.expires_at, old.archived_at, old.superseded_by, old.agent_id,
                            old.user_id) then
        new.actor := memex._actor();
    else
        new.actor := old.actor;
    end if;
    return new;
end
$$;

comment on function memex._guard_memories() is
    'Trigger: actor is always the caller; files change only through the file functions.';

create or replace trigger memories_guard
    before insert or update or delete on memex.memories
    for each row execute function memex._guard_memories();
