-- privileges: service
-- memex._check_dream_edits: MX422 (field edits) unless p_edits is null or a JSON array of
-- at most 200 objects, each with a string path (what memex._dream_edit and the dream
-- functions rely on; the rest of an edit is checked where it is applied).
create or replace function memex._check_dream_edits(p_edits jsonb)
returns void
language plpgsql immutable set search_path = pg_catalog, pg_temp
as $$
begin
    if p_edits is null then
        return;
    end if;
    if jsonb_typeof(p_edits) <> 'array' then
        perform memex._invalid('edits', 'must be a JSON array of edits');
    end if;
    if jsonb_array_length(p_edits) > 200 then
        perform memex._invalid('edits', 'at most 200 edits');
    end if;
    if exists (select from jsonb_array_elements(p_edits) e
               where jsonb_typeof(e) <> 'object'
                  or jsonb_typeof(e -> 'path') is distinct from 'string') then
        perform memex._invalid('edits', 'each edit must be an object with a string path');
    end if;
end
$$;

comment on function memex._check_dream_edits(jsonb) is
    'Checks the shape of a dream''s proposed edits (an array of objects with a path).';
