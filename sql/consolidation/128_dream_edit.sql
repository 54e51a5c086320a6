-- privileges: service
-- memex._dream_edit: a file's content after the edits proposed for it (p_edits: the
-- entries of a dream's p_edits whose path is p_path, in order). An edit replaces the one
-- occurrence of old_text with new_text (memex._apply_patch's replace form; an empty
-- new_text removes old_text), and counts only against the revision it was proposed for:
--   * {path, revision, old_text, new_text, reason}: applied to the content so far when
--     revision is p_revision, else refused (the file changed since the model read it);
--     one that does not apply (old_text absent or repeated, a blank result) is refused
--     and the others still apply;
--   * {path, refused}: refused by the caller already (it checked the proposal), recorded.
-- resolved lists the applied edits (old_text, new_text, reason, each cut at 200
-- characters), refused the others (path, old_text, reason).
create or replace function memex._dream_edit(
    p_path text,
    p_content text,
    p_revision integer,
    p_edits jsonb,
    out content text,
    out resolved jsonb,
    out refused jsonb
)
language plpgsql immutable set search_path = pg_catalog, pg_temp
as $$
declare
    v_edit  jsonb;
    v_error text;
begin
    content := p_content;
    resolved := '[]';
    refused := '[]';
    for v_edit in
        select e from jsonb_array_elements(coalesce(p_edits, '[]')) e where e ->> 'path' = p_path
    loop
        v_error := case
            when v_edit ? 'refused' then coalesce(v_edit ->> 'refused', 'refused')
            when not coalesce(case when jsonb_typeof(v_edit -> 'revision') = 'number'
                                   then (v_edit -> 'revision')::numeric = p_revision end, false)
                then 'the file changed since the edit was proposed'
            when jsonb_typeof(v_edit -> 'old_text') <> 'string'
                 or jsonb_typeof(coalesce(v_edit -> 'new_text', '""')) <> 'string'
                then 'old_text and new_text must be strings'
            end;
        if v_error is null then
            begin
                content := memex._apply_patch(content, null, null, v_edit ->> 'old_text',
                                              coalesce(v_edit ->> 'new_text', ''));
            exception when sqlstate 'MX409' or sqlstate 'MX422' then
                get stacked diagnostics v_error = message_text;
            end;
        end if;
        if v_error is null then
            resolved := resolved || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                'old_text', left(v_edit ->> 'old_text', 200),
                'new_text', left(coalesce(v_edit ->> 'new_text', ''), 200),
                'reason', left(v_edit ->> 'reason', 200))));
        else
            refused := refused || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                'path', p_path, 'old_text', left(v_edit ->> 'old_text', 200),
                'reason', left(v_error, 300))));
        end if;
    end loop;
end
$$;

comment on function memex._dream_edit(text, text, integer, jsonb) is
    'A file''s content after the edits a model proposed for it (resolved and refused listed).';
