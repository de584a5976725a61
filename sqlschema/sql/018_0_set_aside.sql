-- pgjobs schema version 18: the agent sets the views and tables of former calls aside before it
-- drops them. Version 17 checked that nothing of a role's used a former view's row type, then
-- dropped the view; adding a column of a type takes no lock on it, so a role that committed many
-- columns of its own former view's (or table's) row type in the moment between the check and the
-- DROP made that DROP walk them all, which PostgreSQL does not interrupt: a minute for 272,000
-- columns (the fourth review of version 17). Now a former view or table is first set aside, once
-- checked: moved into the schema pgjobs_gone, where no role may look, with USAGE on its types
-- taken from every role, its owner too: from then on no role can name it, nor make a column of
-- its types even by OID (the code review of version 18 did, with a parameter's type). It stays its
-- role's (ANALYZE runs as a table's owner: the attacker review of version 18 made itself superuser
-- when it was given to the superuser). It is dropped at a later statement, checked again, once
-- every transaction that was open when it was moved has ended (one of them may have named the
-- type before the move and commit a column of it after). What a role can still make depend on it
-- is a constant naming it by OID (a column default '<OID>'::regclass), each a whole object that
-- the DROP locks: the server's lock table ends such a walk within about 10,000 of them.
SET LOCAL search_path = pg_catalog, pg_temp;

DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_namespace WHERE nspname = 'pgjobs_gone') THEN
        RAISE EXCEPTION 'schema pgjobs_gone exists (owned by %): pgjobs sets the views of former job calls aside in a schema of that name, where no role may look',
            (SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'pgjobs_gone')
            USING ERRCODE = 'duplicate_schema', HINT = 'rename or drop that schema, then run pgjobs updatesystem again';
    END IF;
END
$$;
-- the installing superuser's, with no privilege for any other role (whatever default privileges say)
CREATE SCHEMA pgjobs_gone;
SELECT pgjobs.pgj_call_acl_clear_('SCHEMA', 'pgjobs_gone', n.nspacl, n.nspowner) FROM pg_namespace n WHERE n.nspname = 'pgjobs_gone';

-- What is set aside in pgjobs_gone: its role, the transaction that moved it, and, once a later
-- transaction saw that one committed, when (asidestamp): it is dropped once no transaction begun
-- before then is open.
CREATE TABLE pgjobs.pgj_call_aside_ (
    asiderel oid PRIMARY KEY,
    asideowner oid NOT NULL, -- its role (its owner when it was set aside)
    asidexid xid8 NOT NULL DEFAULT pg_current_xact_id(),
    asidestamp timestamptz
);
REVOKE ALL ON pgjobs.pgj_call_aside_ FROM PUBLIC;

-- pgj_call_unused_ tells whether nothing of a role's hangs on view or table p_rel: nothing depends on
-- it but its own parts (a view's _RETURN rule, its row type; a table's indexes, TOAST table, primary
-- key), and nothing uses its row type or array type (version 17's checks, the same for both kinds).
-- A view reading a table hangs on it.
CREATE FUNCTION pgjobs.pgj_call_unused_(p_rel oid) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT NOT EXISTS (SELECT FROM pg_depend d
                       WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = p_rel
                         AND NOT (d.classid = 'pg_type'::regclass AND d.deptype = 'i')
                         AND NOT (d.classid = 'pg_rewrite'::regclass
                                  AND d.objid IN (SELECT r.oid FROM pg_rewrite r WHERE r.ev_class = p_rel AND r.rulename = '_RETURN'))
                         AND NOT (d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
                                  AND d.objid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = p_rel
                                                  UNION ALL SELECT t.reltoastrelid FROM pg_class t WHERE t.oid = p_rel))
                         AND NOT (d.classid = 'pg_constraint'::regclass AND d.deptype = 'a'
                                  AND d.objid IN (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = p_rel AND c.contype = 'p')))
       AND NOT pgjobs.pgj_call_type_used_(p_rel)
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_call_unused_(oid) FROM PUBLIC;

-- pgj_call_try_ locks view or table p_rel (p_name), by an ALTER that changes nothing (LOCK TABLE on a
-- view would lock what it reads too), then, if nothing of a role's hangs on it (pgj_call_unused_),
-- drops it (p_drop true), or sets it aside (p_drop false): it moves it into pgjobs_gone (a table
-- and its indexes renamed first, the table's OID added to their names: two roles' tables of the
-- same types have the same names) and takes USAGE of its types from every role, its owner too,
-- so that no role but a superuser may make a column, a view, a domain or a function of its types
-- any more, even by OID (a parameter's type of the extended protocol names a type by OID: the
-- code review of version 18), and notes it, with its owner, in pgj_call_aside_. It stays its
-- role's: ANALYZE runs as a table's owner, and a range type's subtype_diff of a column of the
-- role's type would run as a superuser owner (the attacker review of version 18 made itself
-- superuser so, as that of version 16 had). It returns 'done', or
-- 'held' when something hangs on it; it fails when it is gone meanwhile or another session holds a
-- lock it needs (lock_timeout is the caller's). The caller's subtransaction: none of its own.
CREATE FUNCTION pgjobs.pgj_call_try_(p_rel oid, p_name text, p_drop boolean) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    kind "char" := (SELECT relkind FROM pg_class WHERE oid = p_rel);
    owner oid := (SELECT relowner FROM pg_class WHERE oid = p_rel);
    ix record;
BEGIN
    IF kind = 'v' THEN
        EXECUTE 'ALTER VIEW ' || p_name || ' ALTER COLUMN pgj_call_ DROP DEFAULT';
    ELSIF kind = 'r' THEN
        EXECUTE 'ALTER TABLE ONLY ' || p_name || ' ALTER COLUMN id DROP DEFAULT';
    ELSE
        RAISE EXCEPTION 'pgj_call_try_: % is gone', p_name USING ERRCODE = 'undefined_table';
    END IF;
    IF NOT pgjobs.pgj_call_unused_(p_rel) THEN
        RETURN 'held';
    ELSIF p_drop THEN
        EXECUTE CASE kind WHEN 'v' THEN 'DROP VIEW ' ELSE 'DROP TABLE ' END || p_name;
        RETURN 'done';
    END IF;
    IF kind = 'r' THEN
        -- its indexes go with it: their names too (a role's own index may have a long name)
        FOR ix IN SELECT i.indexrelid::regclass::text AS name, c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
                  WHERE i.indrelid = p_rel LOOP
            EXECUTE format('ALTER INDEX %s RENAME TO %I', ix.name, left(ix.relname, 40) || '_' || p_rel);
        END LOOP;
        EXECUTE format('ALTER TABLE %s RENAME TO %I', p_name, left((SELECT relname FROM pg_class WHERE oid = p_rel), 40) || '_' || p_rel);
        p_name := p_rel::regclass::text;
    END IF;
    EXECUTE CASE kind WHEN 'v' THEN 'ALTER VIEW ' ELSE 'ALTER TABLE ' END || p_name || ' SET SCHEMA pgjobs_gone';
    p_name := p_rel::regclass::text;
    -- USAGE of its types from every role, its owner too (an owner has only the grant options
    -- implicitly, which it cannot use: it cannot name the type), with what they granted on (a
    -- grant made with a grant option would fail the REVOKE without CASCADE: the attacker review
    -- of version 18)
    EXECUTE format('REVOKE ALL ON TYPE %s FROM PUBLIC, %I CASCADE', p_name, pg_get_userbyid(owner));
    FOR ix IN SELECT DISTINCT a.grantee FROM pg_class c JOIN pg_type t ON t.oid = c.reltype, aclexplode(t.typacl) a
              WHERE c.oid = p_rel LOOP
        EXECUTE format('REVOKE ALL ON TYPE %s FROM %s CASCADE', p_name,
                       CASE WHEN ix.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(ix.grantee)) END);
    END LOOP;
    INSERT INTO pgjobs.pgj_call_aside_ (asiderel, asideowner) VALUES (p_rel, owner);
    IF kind = 'r' THEN
        -- the queued rows of its role's former views: the table goes whole (its role's next call
        -- could not delete them: it may not use pgjobs_gone)
        DELETE FROM pgjobs.pgj_call_gone_ WHERE (goneowner, gonetable, goneid) IN
            (SELECT goneowner, gonetable, goneid FROM pgjobs.pgj_call_gone_ WHERE gonetable = p_rel FOR UPDATE SKIP LOCKED);
    END IF;
    RETURN 'done';
END
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_call_try_(oid, text, boolean) FROM PUBLIC;

-- pgj_call_sweep_ is the agent's drop of former calls since version 18 (version 17's
-- pgj_call_views_sweep_ is called no longer). Without p_tidy, it sets aside those of views p_views
-- (the agent's orphan list: pgjobs_call_<OID>.call_<hex> views no job uses, and
-- pgjobs_call_<OID>.args_<hex> tables no view reads) that no job uses now, at most 200, once
-- nothing of a role's hangs on each (pgj_call_try_). With p_tidy (the round's last
-- statement, after those), it drops what earlier statements set aside, 200 at most, checked
-- again, once no transaction begun before a statement saw it set aside (asidestamp) is open in
-- this database, nor any prepared transaction of this database (whose start is not known), and
-- queues the former rows of the views dropped for their roles (pgj_call_gone_); then the call
-- schemas left empty of roles that have no job, and the queue's rows of tables gone. It returns how many it set aside
-- and dropped; how many it left because another session held them or something of a role's hangs
-- on them (held: pg_locks read before the loop, a lock waited for 1 ms, or a dependency); how many
-- it left for the time budget (deferred: the owners in turns, no more of an owner's once its tries
-- took p_each_budget beyond 10 ms each, none once the statement took p_budget); how many set aside
-- wait for transactions (waiting); and how many tries failed otherwise (failed), views and tables
-- alike. Only the agent may call it (a role that may update the leader lease, checked for the
-- session's role).
CREATE FUNCTION pgjobs.pgj_call_sweep_(p_views text[], p_budget interval,
    p_each_budget interval DEFAULT '500 ms', p_tidy boolean DEFAULT false, OUT aside int, OUT dropped int,
    OUT held int, OUT deferred int, OUT waiting int, OUT failed int)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '1ms'
AS $$
DECLARE
    v record;
    gone oid := (SELECT oid FROM pg_namespace WHERE nspname = 'pgjobs_gone');
    busy oid[] := pgjobs.pgj_call_held_();
    oldest timestamptz; -- when the oldest open transaction of this database but this one began
    prepared boolean;
    spent jsonb := '{}'; -- by owner OID, the seconds its tries took beyond 10 ms each
    began timestamptz := clock_timestamp();
    try timestamptz;
    tried int := 0;
    outcome text;
BEGIN
    aside := 0; dropped := 0; held := 0; deferred := 0; waiting := 0; failed := 0;
    IF NOT has_table_privilege(session_user, 'pgjobs.pgj_leader_', 'UPDATE') THEN
        RAISE EXCEPTION 'pgj_call_sweep_: only the agent drops the views of former calls'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF cardinality(p_views) > 200 THEN
        RAISE EXCEPTION 'pgj_call_sweep_: % views given, at most 200 at a time', cardinality(p_views)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    IF p_tidy THEN
        -- what earlier statements set aside is seen committed now: any transaction that named it
        -- before its move began before now
        UPDATE pgjobs.pgj_call_aside_ SET asidestamp = clock_timestamp()
        WHERE asidestamp IS NULL AND asidexid <> pg_current_xact_id();
        -- a role's DROP OWNED BY, or its own DROP, took some
        DELETE FROM pgjobs.pgj_call_aside_ a
        WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = a.asiderel AND c.relnamespace = gone);
        -- (an idle session may still show the start of its last transaction; one whose
        -- activity is not tracked, track_activities off, a superuser's setting, shows none: its
        -- transactions are taken as open for ever)
        SELECT CASE WHEN bool_or(s.state = 'disabled') THEN '-infinity' ELSE min(s.xact_start) END INTO oldest
        FROM pg_stat_activity s
        WHERE s.datid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND s.pid <> pg_backend_pid() AND s.backend_type <> 'autovacuum worker' AND s.state IS DISTINCT FROM 'idle';
        prepared := EXISTS (SELECT FROM pg_prepared_xacts p WHERE p.database = current_database());
    END IF;
    -- what is set aside (p_tidy), then what p_views names; views before tables (a view set aside
    -- still reads its table); the owners in turns
    FOR v IN SELECT * FROM (
             SELECT c.oid, c.oid::regclass::text AS name, a.asideowner AS owner, c.relkind AS kind, true AS set_aside,
                    a.asidestamp IS NULL OR prepared OR oldest <= a.asidestamp AS early
             FROM pgjobs.pgj_call_aside_ a JOIN pg_class c ON c.oid = a.asiderel AND c.relnamespace = gone
             WHERE p_tidy
             UNION ALL
             SELECT c.oid, c.oid::regclass::text, c.relowner, c.relkind, false, false
             FROM unnest(p_views) AS w(view)
             JOIN pg_namespace n ON n.nspname = split_part(w.view, '.', 1)
             JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = split_part(w.view, '.', 2)
             WHERE n.nspname ~ '^pgjobs_call_[0-9]+$'
               AND ((SELECT rolsuper FROM pg_roles WHERE oid = n.nspowner) OR n.nspowner::text = substr(n.nspname, 13))
               AND c.relowner::text = substr(n.nspname, 13)
               AND (c.relkind = 'v' AND c.relname ~ '^call_[0-9a-f]{32}$' AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = w.view)
                    OR c.relkind = 'r' AND c.relname ~ '^args_[0-9a-f]{32}$')
             ) x ORDER BY x.set_aside DESC, x.kind DESC, row_number() OVER (PARTITION BY x.set_aside, x.kind, x.owner ORDER BY x.oid), x.owner LOOP
        IF v.early THEN
            waiting := waiting + 1; -- a transaction open when it was set aside may still name it
            CONTINUE;
        ELSIF v.oid = ANY (busy) THEN
            held := held + 1; -- a run of the former call, or a role's lock: tried again later
            CONTINUE;
        ELSIF (tried > 0 AND clock_timestamp() - began > p_budget) OR (spent ->> v.owner::text)::float8 >= extract(epoch FROM p_each_budget)
              OR tried >= 200 THEN -- each drop holds its locks to the end of the transaction
            deferred := deferred + 1;
            CONTINUE;
        END IF;
        try := clock_timestamp();
        tried := tried + 1;
        BEGIN
            -- (no CONTINUE in this block: the try's time is counted below)
            IF v.kind = 'v' AND NOT v.set_aside AND EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = v.name) THEN
                outcome := 'used'; -- set again meanwhile
            ELSIF v.set_aside AND v.kind = 'v' THEN
                -- its row of arguments, which its role deletes at its next call (the table stays
                -- in its call schema)
                INSERT INTO pgjobs.pgj_call_gone_
                SELECT v.owner, t.oid, substr(split_part(v.name, '.', 2), 6)
                FROM pg_depend d JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
                JOIN pg_class t ON d.refclassid = 'pg_class'::regclass AND t.oid = d.refobjid
                WHERE r.ev_class = v.oid AND t.relkind = 'r' AND t.relowner = v.owner AND t.relname ~ '^args_[0-9a-f]{32}$'
                  AND t.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = 'pgjobs_call_' || v.owner)
                LIMIT 1
                ON CONFLICT DO NOTHING;
                outcome := pgjobs.pgj_call_try_(v.oid, v.name, true);
            ELSE
                outcome := pgjobs.pgj_call_try_(v.oid, v.name, v.set_aside);
            END IF;
            IF outcome = 'done' AND v.set_aside THEN
                DELETE FROM pgjobs.pgj_call_aside_ WHERE asiderel = v.oid;
                IF v.kind = 'r' THEN
                    -- its queued rows; those its role holds (pgj_call_gone_done_ in an open
                    -- transaction) go at a later sweep, below
                    DELETE FROM pgjobs.pgj_call_gone_ WHERE (goneowner, gonetable, goneid) IN
                        (SELECT goneowner, gonetable, goneid FROM pgjobs.pgj_call_gone_ WHERE gonetable = v.oid FOR UPDATE SKIP LOCKED);
                END IF;
                dropped := dropped + 1;
            ELSIF outcome = 'done' THEN
                aside := aside + 1;
            ELSIF outcome = 'held' THEN
                RAISE SQLSTATE 'PJ001'; -- its queued row with it
            END IF;
        EXCEPTION WHEN lock_not_available OR SQLSTATE 'PJ001' THEN
            held := held + 1; -- taken since the sweep began, or something hangs on it: tried again later
        WHEN OTHERS THEN
            failed := failed + 1; -- renamed or dropped meanwhile, or its owner made something on it: tried again later
        END;
        spent := pgjobs.pgj_call_spent_(spent, v.owner, try);
    END LOOP;
    IF NOT p_tidy THEN
        RETURN;
    END IF;
    -- the schema of a role whose jobs are all dropped, once empty: the role may then be dropped;
    -- not one another session holds (any role may lock any schema by name)
    busy := ARRAY(SELECT l.objid FROM pg_locks l
                  WHERE l.locktype = 'object' AND l.classid = 'pg_namespace'::regclass
                    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    AND l.pid IS DISTINCT FROM pg_backend_pid());
    FOR v IN SELECT quote_ident(n.nspname) AS name FROM pg_namespace n
             WHERE n.nspname ~ '^pgjobs_call_[0-9]+$' AND n.oid <> ALL (busy)
               AND ((SELECT rolsuper FROM pg_roles WHERE oid = n.nspowner) OR n.nspowner::text = substr(n.nspname, 13))
               AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobownerid::text = substr(n.nspname, 13))
               AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = n.oid) LOOP
        EXIT WHEN tried > 0 AND clock_timestamp() - began > p_budget; -- the rest at a later sweep
        tried := tried + 1;
        BEGIN
            EXECUTE 'DROP SCHEMA ' || v.name;
        EXCEPTION WHEN OTHERS THEN
            NULL; -- something else is in it, or it is in use
        END;
    END LOOP;
    -- the queue's rows of tables dropped otherwise (DROP OWNED BY), but those a role holds
    BEGIN
        DELETE FROM pgjobs.pgj_call_gone_ WHERE (goneowner, gonetable, goneid) IN
            (SELECT g.goneowner, g.gonetable, g.goneid FROM pgjobs.pgj_call_gone_ g
             WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = g.gonetable) FOR UPDATE SKIP LOCKED);
    EXCEPTION WHEN OTHERS THEN
        NULL; -- at a later sweep
    END;
END
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_call_sweep_(text[], interval, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgjobs.pgj_call_sweep_(text[], interval, interval, boolean) TO PUBLIC; -- it checks its caller

-- version 17's sweep, which dropped at once, is called no longer: no role may. It is not dropped: a
-- role's view over it would make the upgrade fail.
REVOKE ALL ON FUNCTION pgjobs.pgj_call_views_sweep_(text[], interval, interval, boolean) FROM PUBLIC;
