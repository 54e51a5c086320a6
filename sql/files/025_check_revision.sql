-- privileges: service
-- memex._check_revision: raise MX422 (naming p_field) unless p_revision is a revision
-- number, 1 or more. The one rule of the functions that name a file's revision
-- (memex.get_revision, restore_revision, diff_revisions), checked with the other
-- arguments before the caller is authorized, as memex._check_path is.
create or replace function memex._check_revision(
    p_revision integer, p_field text default 'revision'
)
returns void
language plpgsql immutable set search_path = pg_catalog, pg_temp
as $$
begin
    if p_revision is null or p_revision < 1 then
        perform memex._invalid(p_field, 'must be a revision number (1 or more)');
    end if;
end
$$;

comment on function memex._check_revision(integer, text) is
    'Raise MX422 unless the revision number is 1 or more.';
