-- privileges: tenant-helper
-- memex._file_record: a file (its memories row) at revision p_revision as the public
-- memex.file_record: with lines p_from_line..p_to_line (1-based, inclusive, clipped to
-- the file) of its content when a range is given, else the whole content.
create or replace function memex._file_record(
    p_row memex.memories, p_revision integer, p_from_line integer default null,
    p_to_line integer default null
)
returns memex.file_record
language plpgsql immutable set search_path = pg_catalog, pg_temp
as $$
declare
    v_lines  text[] := string_to_array(p_row.content, E'\n');
    v_count  integer;
    v_result memex.file_record;
begin
    if right(p_row.content, 1) = E'\n' then
        v_lines := v_lines[1:cardinality(v_lines) - 1];
    end if;
    v_count := coalesce(cardinality(v_lines), 0);
    v_result.path := p_row.path;
    v_result.memory_id := p_row.id;
    v_result.revision := p_revision;
    v_result.size := length(p_row.content);
    v_result.line_count := v_count;
    v_result.created_at := p_row.created_at;
    v_result.updated_at := p_row.updated_at;
    v_result.actor := p_row.actor;
    if p_from_line is null and p_to_line is null then
        v_result.content := p_row.content;
        v_result.from_line := least(1, v_count);
        v_result.to_line := v_count;
    else
        v_result.from_line := coalesce(p_from_line, 1);
        v_result.to_line := least(coalesce(p_to_line, v_count), v_count);
        v_result.content := coalesce(
            array_to_string(v_lines[v_result.from_line:v_result.to_line], E'\n'), '');
    end if;
    return v_result;
end
$$;

comment on function memex._file_record(memex.memories, integer, integer, integer) is
    'A file row at a revision as memex.file_record, optionally only a range of its lines.';
