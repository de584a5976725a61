-- pgjobs schema version 17: the agent's drop of the views of former calls no longer waits for
-- each view a role holds. Version 16 waited up to 100 ms for the lock of each: a role that kept
-- 260 of its former views locked in an open transaction made each drop round of the agent wait
-- 26 s, on one of its record sessions, and a statement past the agent's 30 s timeout rolled back
-- the drops of other roles' views with it (the last attacker review of version 16).
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_call_held_ returns the relations of this database that another session holds a lock on, or
-- waits for (a prepared transaction's too).
CREATE FUNCTION pgjobs.pgj_call_held_() RETURNS oid[]
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce(array_agg(DISTINCT l.relation), '{}') FROM pg_locks l
    WHERE l.locktype = 'relation' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.pid IS DISTINCT FROM pg_backend_pid()
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_call_held_() FROM PUBLIC;

-- pgj_call_views_drop_ drops those of views p_views (which the agent found no job used, a while
-- before) that no job uses now, at most 200, with their rows of arguments, then the tables of
-- arguments no view reads (theirs, and those p_views names: pgjobs_call_<OID>.args_<hex>), then
-- the call schemas left empty of roles that have no job, and returns
-- how many views it dropped. A view or table another session holds (a run of a job's former call)
-- is left for later at once, as found in pg_locks when the call begins (for the views) and when it
-- turns to the tables; the lock of one taken since is waited for at most 100 ms, and the views and
-- tables of an owner one of whose lock waits ran out are left for later too. Only the agent may
-- call it (a role that may update the leader lease, as the agents' roles must: checked for the
-- session's role).
CREATE OR REPLACE FUNCTION pgjobs.pgj_call_views_drop_(p_views text[]) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
AS $$
DECLARE
    v record;
    tables oid[] := '{}';
    dropped int := 0;
    held oid[]; -- the relations another session holds a lock on, or waits for
    waited oid[] := '{}'; -- the owners one of whose lock waits ran out
BEGIN
    IF NOT has_table_privilege(session_user, 'pgjobs.pgj_leader_', 'UPDATE') THEN
        RAISE EXCEPTION 'pgj_call_views_drop_: only the agent drops the views of former calls'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF cardinality(p_views) > 200 THEN
        RAISE EXCEPTION 'pgj_call_views_drop_: % views given, at most 200 at a time', cardinality(p_views)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    held := pgjobs.pgj_call_held_();
    FOR v IN SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name, c.oid AS view, c.relowner AS owner, substr(c.relname, 6) AS hex,
                    (SELECT t.oid FROM pg_depend d JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
                     JOIN pg_class t ON d.refclassid = 'pg_class'::regclass AND t.oid = d.refobjid
                     WHERE r.ev_class = c.oid AND t.relnamespace = n.oid AND t.relname ~ '^args_[0-9a-f]{32}$' AND t.relkind = 'r' AND t.relowner = c.relowner
                     LIMIT 1) AS args
             FROM unnest(p_views) AS w(view)
             JOIN pg_namespace n ON n.nspname = split_part(w.view, '.', 1)
             JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = split_part(w.view, '.', 2)
             WHERE w.view ~ '^pgjobs_call_[0-9]+\.call_[0-9a-f]{32}$' AND c.relkind = 'v'
               AND ((SELECT rolsuper FROM pg_roles WHERE oid = n.nspowner) OR n.nspowner::text = substr(n.nspname, 13))
               AND c.relowner::text = substr(n.nspname, 13)
               AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = w.view)
               AND c.oid <> ALL (held) LOOP
        IF v.owner = ANY (waited) THEN
            CONTINUE;
        END IF;
        BEGIN
            -- locked first, then dropped only if nothing hangs on it but its own rule (a trigger
            -- would go with it, taking locks: a role's view with 20,000 of them made the drop run
            -- out of the lock table; locked, none can be added meanwhile). LOCK TABLE on a view
            -- would lock the tables it reads too, holding up the runs of the role's other calls:
            -- an ALTER VIEW that changes nothing locks the view alone.
            EXECUTE 'ALTER VIEW ' || v.name || ' ALTER COLUMN pgj_call_ DROP DEFAULT';
            IF EXISTS (SELECT FROM pg_depend d
                       WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = v.view
                         AND NOT (d.classid = 'pg_rewrite'::regclass -- its own rule, not one its role added
                                  AND d.objid IN (SELECT r.oid FROM pg_rewrite r WHERE r.ev_class = v.view AND r.rulename = '_RETURN'))
                         AND NOT (d.classid = 'pg_type'::regclass AND d.deptype = 'i'))
               OR EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = split_part(v.name, '.', 1) || '.' || split_part(v.name, '.', 2)) THEN
                CONTINUE;
            END IF;
            EXECUTE 'DROP VIEW ' || v.name;
            IF v.args IS NOT NULL THEN
                -- the view's row: its role deletes it at its next call
                INSERT INTO pgjobs.pgj_call_gone_ VALUES (v.owner, v.args, v.hex) ON CONFLICT DO NOTHING;
                tables := tables || v.args;
            END IF;
            dropped := dropped + 1;
        EXCEPTION WHEN lock_not_available THEN
            -- in use since the call began: a role that holds its former views in an open
            -- transaction made each drop wait, 100 ms a view (the attacker review of version 16)
            waited := waited || v.owner;
        WHEN OTHERS THEN
            NULL; -- renamed or dropped meanwhile, or its owner made something on it: tried again later
        END;
    END LOOP;
    -- the tables of arguments of the views dropped, and those given, once no view reads them (a
    -- role's views all went with DROP OWNED), and nothing else hangs on them (a trigger would go
    -- with them, taking locks)
    held := pgjobs.pgj_call_held_();
    FOR v IN SELECT t.oid, t.oid::regclass::text AS name, t.relowner AS owner
             FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
             WHERE t.relkind = 'r' AND t.relname ~ '^args_[0-9a-f]{32}$' AND n.nspname ~ '^pgjobs_call_[0-9]+$'
               AND t.relowner::text = substr(n.nspname, 13)
               AND (t.oid = ANY (tables) OR (n.nspname || '.' || t.relname) = ANY (p_views))
               -- read by no view (else it is not locked: the runs of the calls that read it would wait)
               AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = t.oid
                                                        AND d.classid = 'pg_rewrite'::regclass)
               AND t.oid <> ALL (held) LOOP
        IF v.owner = ANY (waited) THEN
            CONTINUE;
        END IF;
        BEGIN
            -- locked by an ALTER TABLE that changes nothing: LOCK TABLE on what its role made a view
            -- (PostgreSQL 15 lets it) would lock what that view reads, as the definer
            EXECUTE 'ALTER TABLE ONLY ' || v.name || ' ALTER COLUMN id DROP DEFAULT';
            IF EXISTS (SELECT FROM pg_depend d
                       WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = v.oid
                         AND NOT (d.classid = 'pg_type'::regclass AND d.deptype = 'i')
                         AND NOT (d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
                                  AND d.objid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = v.oid
                                                  UNION ALL SELECT t.reltoastrelid FROM pg_class t WHERE t.oid = v.oid))
                         AND NOT (d.classid = 'pg_constraint'::regclass AND d.deptype = 'a'
                                  AND d.objid IN (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = v.oid AND c.contype = 'p'))) THEN
                CONTINUE; -- read by a view, or something of its role's hangs on it
            END IF;
            EXECUTE 'DROP TABLE ' || v.name;
            DELETE FROM pgjobs.pgj_call_gone_ WHERE gonetable = v.oid;
        EXCEPTION WHEN lock_not_available THEN
            waited := waited || v.owner;
        WHEN OTHERS THEN
            NULL; -- in use, or a view was made on it meanwhile: tried again later
        END;
    END LOOP;
    -- the schema of a role whose jobs are all dropped, once empty: the role may then be dropped
    FOR v IN SELECT quote_ident(n.nspname) AS name FROM pg_namespace n
             WHERE n.nspname ~ '^pgjobs_call_[0-9]+$'
               AND ((SELECT rolsuper FROM pg_roles WHERE oid = n.nspowner) OR n.nspowner::text = substr(n.nspname, 13))
               AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobownerid::text = substr(n.nspname, 13))
               AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = n.oid) LOOP
        BEGIN
            EXECUTE 'DROP SCHEMA ' || v.name;
        EXCEPTION WHEN OTHERS THEN
            NULL; -- something else is in it, or it is in use
        END;
    END LOOP;
    -- the rows of tables dropped otherwise (DROP OWNED BY)
    DELETE FROM pgjobs.pgj_call_gone_ g WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = g.gonetable);
    RETURN dropped;
END
$$;
