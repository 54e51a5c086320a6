"""Read a memexdb database's catalog back as plain text lines, for the golden privileges
snapshot (tests/test_sql_privileges.py) and the fresh-vs-upgraded comparison
(tests/test_catalog.py).

The role that ran the migration owns the functions that are not security definers and the
schema; its name depends on the server (postgres, a cloud admin), so it is written
`<migrator>`.
"""

from __future__ import annotations

import psycopg

# aclexplode over an object's ACL (or the default one its owner gets), one line per
# grantee: the role (public for PUBLIC) and its privileges, the owner's own left out.
_GRANTS = """
    coalesce((
        select string_agg(g.grantee || ':' || g.privileges, ' ' order by g.grantee)
        from (
            select case when a.grantee = 0 then 'public'
                        when a.grantee = {owner} then null
                        else pg_get_userbyid(a.grantee) end as grantee,
                   string_agg(a.privilege_type, ',' order by a.privilege_type) as privileges
            from aclexplode(coalesce({acl}, acldefault('{kind}', {owner}))) a
            group by 1
        ) g where g.grantee is not null
    ), '-')
"""


def _owner(column: str) -> str:
    return (
        f"case when {column} = (select nspowner from pg_namespace where nspname = 'memex')"
        f" then '<migrator>' else pg_get_userbyid({column}) end"
    )


def privileges(conn: psycopg.Connection) -> list[str]:
    """Every memex function, table, sequence and the schema itself: owner, security
    definer flag, row-level security, and who is granted what."""
    functions = conn.execute(
        f"""
        select format('function %s owner=%s definer=%s grants=%s', p.oid::regprocedure,
                      {_owner("p.proowner")}, case when p.prosecdef then 'yes' else 'no' end,
                      {_GRANTS.format(acl="p.proacl", kind="f", owner="p.proowner")})
        from pg_proc p where p.pronamespace = 'memex'::regnamespace
        order by p.oid::regprocedure::text
        """
    ).fetchall()
    relations = conn.execute(
        f"""
        select format('%s %s owner=%s rls=%s grants=%s',
                      case c.relkind when 'S' then 'sequence' when 'v' then 'view'
                                     when 'm' then 'matview' else 'table' end,
                      c.oid::regclass, {_owner("c.relowner")},
                      case when c.relforcerowsecurity then 'forced'
                           when c.relrowsecurity then 'on' else 'off' end,
                      {_GRANTS.format(acl="c.relacl", kind="r", owner="c.relowner")})
        from pg_class c
        where c.relnamespace = 'memex'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S')
        order by c.oid::regclass::text
        """
    ).fetchall()
    schema = conn.execute(
        f"""
        select format('schema memex owner=<migrator> grants=%s',
                      {_GRANTS.format(acl="n.nspacl", kind="n", owner="n.nspowner")})
        from pg_namespace n where n.nspname = 'memex'
        """
    ).fetchall()
    return [line for (line,) in schema + relations + functions]


# What "the same schema" means for fresh and upgraded databases: each query yields one
# sorted list of text rows.
_CATALOG = {
    "functions": f"""
        select format('%s returns %s lang=%s volatility=%s definer=%s strict=%s config=%s'
                      ' owner=%s grants=%s body=%s comment=%s',
                      p.oid::regprocedure, pg_get_function_result(p.oid), l.lanname,
                      p.provolatile, p.prosecdef, p.proisstrict, p.proconfig,
                      {_owner("p.proowner")},
                      {_GRANTS.format(acl="p.proacl", kind="f", owner="p.proowner")},
                      md5(p.prosrc), md5(coalesce(obj_description(p.oid, 'pg_proc'), '')))
        from pg_proc p join pg_language l on l.oid = p.prolang
        where p.pronamespace = 'memex'::regnamespace
    """,
    "function defaults": """
        select format('%s %s', p.oid::regprocedure, pg_get_function_arguments(p.oid))
        from pg_proc p where p.pronamespace = 'memex'::regnamespace
    """,
    "types": """
        select format('%s kind=%s fields=%s labels=%s', t.oid::regtype, t.typtype,
                      (select string_agg(a.attname || ' ' || format_type(a.atttypid,
                                         a.atttypmod), ', ' order by a.attnum)
                       from pg_attribute a where a.attrelid = t.typrelid and a.attnum > 0
                         and not a.attisdropped),
                      (select string_agg(e.enumlabel, ',' order by e.enumsortorder)
                       from pg_enum e where e.enumtypid = t.oid))
        from pg_type t left join pg_class c on c.oid = t.typrelid
        where t.typnamespace = 'memex'::regnamespace and t.typelem = 0
          and (c.oid is null or c.relkind = 'c')
    """,
    "relations": f"""
        select format('%s kind=%s persistence=%s options=%s rls=%s/%s owner=%s grants=%s',
                      c.oid::regclass, c.relkind, c.relpersistence, c.reloptions,
                      c.relrowsecurity, c.relforcerowsecurity, {_owner("c.relowner")},
                      {_GRANTS.format(acl="c.relacl", kind="r", owner="c.relowner")})
        from pg_class c
        where c.relnamespace = 'memex'::regnamespace and c.relkind in ('r', 'p', 'v', 'm', 'S')
    """,
    "columns": """
        select format('%s.%s %s notnull=%s default=%s identity=%s generated=%s storage=%s'
                      ' compression=%s', c.oid::regclass, a.attname,
                      format_type(a.atttypid, a.atttypmod), a.attnotnull,
                      pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated,
                      a.attstorage, a.attcompression)
        from pg_attribute a join pg_class c on c.oid = a.attrelid
        left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
        where c.relnamespace = 'memex'::regnamespace and c.relkind in ('r', 'p', 'v', 'm')
          and a.attnum > 0 and not a.attisdropped
    """,
    "column order": """
        select format('%s: %s', c.oid::regclass,
                      string_agg(a.attname, ', ' order by a.attnum))
        from pg_attribute a join pg_class c on c.oid = a.attrelid
        where c.relnamespace = 'memex'::regnamespace and c.relkind in ('r', 'p')
          and a.attnum > 0 and not a.attisdropped
        group by c.oid
    """,
    "indexes": """
        select format('%s options=%s', pg_get_indexdef(i.indexrelid), c.reloptions)
        from pg_index i join pg_class c on c.oid = i.indexrelid
        where c.relnamespace = 'memex'::regnamespace
    """,
    "constraints": """
        select format('%s %s %s', coalesce(r.oid::regclass::text, t.oid::regtype::text),
                      k.conname, pg_get_constraintdef(k.oid))
        from pg_constraint k
        left join pg_class r on r.oid = k.conrelid
        left join pg_type t on t.oid = k.contypid
        where k.connamespace = 'memex'::regnamespace
    """,
    "policies": """
        select format('%s.%s %s %s roles=%s using=%s check=%s', schemaname, tablename,
                      policyname, cmd, roles, qual, with_check)
        from pg_policies where schemaname = 'memex'
    """,
    "triggers": """
        select pg_get_triggerdef(g.oid) from pg_trigger g join pg_class c on c.oid = g.tgrelid
        where c.relnamespace = 'memex'::regnamespace and not g.tgisinternal
    """,
    "schema": f"""
        select format('memex owner=<migrator> grants=%s',
                      {_GRANTS.format(acl="n.nspacl", kind="n", owner="n.nspowner")})
        from pg_namespace n where n.nspname = 'memex'
    """,
    "settings": """
        select format('%s = %s', name, value) from memex.settings
    """,
}


def catalog(conn: psycopg.Connection) -> dict[str, list[str]]:
    """The parts of the catalog a migration defines (see _CATALOG), each sorted."""
    return {
        part: sorted(row for (row,) in conn.execute(query).fetchall())
        for part, query in _CATALOG.items()
    }
