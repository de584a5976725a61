-- What the uninstall would drop, or fail on, that is not pgjobs': objects outside pgjobs that
-- depend (as a normal dependency) on something in the pgjobs or pgjobs_agent schema, which DROP
-- SCHEMA ... CASCADE would drop with them (a role's column of a pgjobs view's row type, a check
-- constraint or a default calling a pgjobs function, a view over pgjobs' views, a function taking
-- a pgjobs type), or on the views and tables of job calls pgjobs made (pgjobs_call_<OID>,
-- pgjobs_gone), whose drops would fail on them. Each is described as PostgreSQL's DETAIL would
-- (column snap of table al.hist), at most $1.
WITH ours AS (
    SELECT n.oid FROM pg_catalog.pg_namespace n WHERE n.nspname OPERATOR(pg_catalog.=) ANY (ARRAY['pgjobs', 'pgjobs_agent'])
), calls AS ( -- the views and tables of job calls, dropped by name
    SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    WHERE n.nspname OPERATOR(pg_catalog.=) 'pgjobs_gone'
       OR n.nspname OPERATOR(pg_catalog.~) '^pgjobs_call_[0-9]+$' AND c.relname OPERATOR(pg_catalog.~) '^(call|args)_[0-9a-f]{32}$'
), inside (classid, objid) AS (
    SELECT 'pg_catalog.pg_namespace'::pg_catalog.regclass, o.oid FROM ours o
    UNION ALL SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, c.oid FROM pg_catalog.pg_class c WHERE c.relnamespace IN (SELECT o.oid FROM ours o)
    UNION ALL SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, k.oid FROM calls k
    UNION ALL SELECT 'pg_catalog.pg_type'::pg_catalog.regclass, t.oid FROM pg_catalog.pg_type t WHERE t.typrelid IN (SELECT k.oid FROM calls k)
    UNION ALL SELECT 'pg_catalog.pg_proc'::pg_catalog.regclass, p.oid FROM pg_catalog.pg_proc p WHERE p.pronamespace IN (SELECT o.oid FROM ours o)
    UNION ALL SELECT 'pg_catalog.pg_type'::pg_catalog.regclass, t.oid FROM pg_catalog.pg_type t WHERE t.typnamespace IN (SELECT o.oid FROM ours o)
), dependent AS (
    SELECT DISTINCT d.classid, d.objid, d.objsubid,
           CASE d.classid -- the relation a part of one belongs to
               WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN d.objid
               WHEN 'pg_catalog.pg_rewrite'::pg_catalog.regclass THEN (SELECT w.ev_class FROM pg_catalog.pg_rewrite w WHERE w.oid OPERATOR(pg_catalog.=) d.objid)
               WHEN 'pg_catalog.pg_attrdef'::pg_catalog.regclass THEN (SELECT a.adrelid FROM pg_catalog.pg_attrdef a WHERE a.oid OPERATOR(pg_catalog.=) d.objid)
               WHEN 'pg_catalog.pg_trigger'::pg_catalog.regclass THEN (SELECT g.tgrelid FROM pg_catalog.pg_trigger g WHERE g.oid OPERATOR(pg_catalog.=) d.objid)
               WHEN 'pg_catalog.pg_policy'::pg_catalog.regclass THEN (SELECT p.polrelid FROM pg_catalog.pg_policy p WHERE p.oid OPERATOR(pg_catalog.=) d.objid)
               WHEN 'pg_catalog.pg_constraint'::pg_catalog.regclass THEN (SELECT NULLIF(k.conrelid, 0) FROM pg_catalog.pg_constraint k WHERE k.oid OPERATOR(pg_catalog.=) d.objid)
           END AS rel
    FROM pg_catalog.pg_depend d
    JOIN inside i ON d.refclassid OPERATOR(pg_catalog.=) i.classid AND d.refobjid OPERATOR(pg_catalog.=) i.objid
    WHERE d.deptype OPERATOR(pg_catalog.=) 'n'
      AND NOT EXISTS (SELECT FROM inside o WHERE o.classid OPERATOR(pg_catalog.=) d.classid AND o.objid OPERATOR(pg_catalog.=) d.objid)
), placed AS (
    SELECT d.*, coalesce(n.nspname::text, (pg_catalog.pg_identify_object(d.classid, d.objid, d.objsubid)).schema) AS schema, c.relname::text AS relname
    FROM dependent d
    LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.rel
    LEFT JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
)
SELECT CASE WHEN p.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass -- a view's rule: the view
            THEN pg_catalog.pg_describe_object('pg_catalog.pg_class'::pg_catalog.regclass, p.rel, 0)
            ELSE pg_catalog.pg_describe_object(p.classid, p.objid, p.objsubid) END AS what,
       pg_catalog.count(*) OVER ()::int
FROM placed p
WHERE p.schema IS NULL
   OR NOT (p.schema OPERATOR(pg_catalog.=) ANY (ARRAY['pgjobs', 'pgjobs_agent', 'pgjobs_gone'])
           OR p.schema OPERATOR(pg_catalog.~) '^pgjobs_call_[0-9]+$' AND p.relname OPERATOR(pg_catalog.~) '^(call|args)_[0-9a-f]{32}$')
ORDER BY 1
LIMIT $1
