-- privileges: tenant
-- memex.read_file (MCP memory_read): a file of tenant (agent_id, user_id) by virtual
-- path, whole or lines p_from_line..p_to_line (1-based, inclusive, clipped to the file;
-- to_line before from_line is MX422);
-- with p_as_of, the file as it was at that time (from its revisions). MX404 when there is
-- no such file (at that time: the message says whether it did not exist yet or had been
-- deleted then). Logged in the access log ('read').
create or replace function memex.read_file(
    p_agent_id text,
    p_user_id text,
    p_path text,
    p_from_line integer default null,
    p_to_line integer default null,
    p_as_of timestamptz default null
)
returns memex.file_record
language plpgsql volatile security definer set search_path = pg_catalog, pg_temp
as $$
declare
    v_row      memex.memories;
    v_rev      memex.file_revisions;
    v_revision integer;
begin
    perform memex._check_tenant(p_agent_id, p_user_id);
    perform memex._check_path(p_path);
    if p_from_line is not null and p_from_line not between 1 and 1000000 then
        perform memex._invalid('from_line', 'must be 1 to 1000000');
    end if;
    if p_to_line is not null and p_to_line not between 1 and 1000000 then
        perform memex._invalid('to_line', 'must be 1 to 1000000');
    end if;
    if p_to_line < p_from_line then
        perform memex._invalid('to_line', format('must be at least from_line (%s)', p_from_line));
    end if;
    perform memex._authorize(p_agent_id, p_user_id, 'read');
    if p_as_of is null then
        select m.* into v_row from memex.memories m
        where m.agent_id = p_agent_id and m.user_id = p_user_id and m.path = p_path;
        v_revision := (memex._file_revision(p_agent_id, p_user_id, p_path)).revision;
    else
        select r.* into v_rev from memex.file_revisions r
        where r.agent_id = p_agent_id and r.user_id = p_user_id and r.path = p_path
          and r.at <= p_as_of
        order by r.revision desc limit 1;
        if v_rev.revision is null then
            perform from memex.file_revisions r
            where r.agent_id = p_agent_id and r.user_id = p_user_id and r.path = p_path;
            if found then
                raise exception 'file % did not exist yet at %', p_path, p_as_of
                    using errcode = 'MX404';
            end if;
        elsif v_rev.operation = 'delete' then
            raise exception 'file % was deleted at %, before %', p_path, v_rev.at, p_as_of
                using errcode = 'MX404';
        end if;
        if v_rev.operation <> 'delete' then
            select m.* into v_row from memex.memories m where m.id = v_rev.memory_id;
            v_row.id := v_rev.memory_id;
            v_row.path := p_path;
            v_row.content := v_rev.content;
            v_row.updated_at := v_rev.at;
            v_row.actor := v_rev.actor;
            v_row.created_at := (select min(r.at) from memex.file_revisions r
                                 where r.agent_id = p_agent_id and r.user_id = p_user_id
                                   and r.path = p_path and r.memory_id = v_rev.memory_id);
            v_revision := v_rev.revision;
        end if;
    end if;
    if v_row.id is null then
        raise exception 'file % not found', p_path using errcode = 'MX404';
    end if;
    perform memex._log_access(p_agent_id, p_user_id, 'read', p_path,
                              jsonb_strip_nulls(jsonb_build_object(
                                  'revision', v_revision, 'from_line', p_from_line,
                                  'to_line', p_to_line, 'as_of', p_as_of)));
    return memex._file_record(v_row, v_revision, p_from_line, p_to_line);
end
$$;

comment on function memex.read_file(text, text, text, integer, integer, timestamptz) is
    'A file of a tenant (whole, a line range, or as of a time); MX404 if absent.';
