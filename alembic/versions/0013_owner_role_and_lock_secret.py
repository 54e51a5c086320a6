"""A non-superuser owner of memexdb's objects, and a secret that keys its locks.

- Role `memex_owner` (cluster-wide, NOLOGIN, no BYPASSRLS, created once, kept on
  downgrade while other databases use it): owns the memex tables and every security
  definer function (sql/999_grants.sql re-applies the ownership on every migrate). A
  superuser-owned security definer function skips row-level security; one owned by
  memex_owner is held to it (the tenant tables force it), so a definer function that
  forgot to authorize its caller still cannot reach another tenant's rows. The migrating
  role is made a member, so that it keeps altering what memex_owner owns.
- memex.lock_secret: one random 32-byte secret, readable by memex_owner alone. Advisory
  lock keys are derived from it (memex._lock_key): any role may take any advisory lock,
  so a key that a tenant can compute is a key it can hold hostage.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05
"""

from alembic import op
from memexdb.migrations import run_revision

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # sql/revisions/0013_owner_role_and_lock_secret.sql (frozen; the TypeScript package runs it too)
    run_revision(op.get_bind(), revision)


def downgrade() -> None:
    op.execute("drop table memex.lock_secret")
    op.execute(
        """
        do $$
        declare r record;
        begin
            -- hand back what memex_owner owns in this schema to the migrating role
            for r in select c.oid::regclass as name from pg_class c
                     join pg_namespace n on n.oid = c.relnamespace
                     where n.nspname = 'memex' and c.relkind in ('r', 'p')
                       and c.relowner = 'memex_owner'::regrole loop
                execute format('alter table %s owner to %I', r.name, current_user);
            end loop;
            for r in select p.oid::regprocedure as name from pg_proc p
                     join pg_namespace n on n.oid = p.pronamespace
                     where n.nspname = 'memex' and p.proowner = 'memex_owner'::regrole loop
                execute format('alter function %s owner to %I', r.name, current_user);
            end loop;
            execute 'revoke all on schema memex from memex_owner';
            execute 'revoke execute on all functions in schema memex from memex_owner';
            begin
                drop role memex_owner;
            exception when dependent_objects_still_exist or object_in_use then
                null;
            end;
        end
        $$
        """
    )
