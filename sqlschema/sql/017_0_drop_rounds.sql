-- pgjobs schema version 17: the agent's drop of the views of former calls is bounded in time,
-- whatever a role holds. Version 16 waited up to 100 ms for the lock of each view: a role that kept
-- 260 of its former views locked in an open transaction made each drop round of the agent wait
-- 26 s, on one of its record sessions, and a statement past the agent's 30 s timeout rolled back
-- the drops of other roles' views with it (the last attacker review of version 16). Locks on the
-- views' row types, and locks let go just before the wait would time out, did the same to a
-- first fix that only skipped what pg_locks showed (the attacker review of version 17).
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_call_held_ returns the relations of this database that another session (a prepared
-- transaction too) holds a lock on or waits for: on the relation, or on its row type or the array
-- type of its row type, which DROP VIEW locks as well.
CREATE FUNCTION pgjobs.pgj_call_held_() RETURNS oid[]
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    WITH l AS (SELECT * FROM pg_locks
               WHERE database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND pid IS DISTINCT FROM pg_backend_pid())
    SELECT coalesce(array_agg(DISTINCT rel), '{}') FROM (
        SELECT l.relation AS rel FROM l WHERE l.locktype = 'relation'
        UNION ALL
        SELECT coalesce(nullif(t.typrelid, 0), e.typrelid) FROM l JOIN pg_type t ON t.oid = l.objid
        LEFT JOIN pg_type e ON e.oid = t.typelem
        WHERE l.locktype = 'object' AND l.classid = 'pg_type'::regclass) h
    WHERE rel IS NOT NULL AND rel <> 0
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_call_held_() FROM PUBLIC;

-- pgj_call_views_sweep_ drops those of views p_views (which the agent found no job used, a while
-- before) that no job uses now, at most 200, with their rows of arguments, then the tables of
-- arguments no view reads (theirs, and those p_views names: pgjobs_call_<OID>.args_<hex>), then
-- the call schemas left empty of roles that have no job. It returns how many views it dropped
-- (dropped), how many views and tables it left because another session held them (held: found in
-- pg_locks before each loop, or a lock waited for 100 ms), and how many it left for the time
-- budget (deferred): it tries the owners' views in turns, one of each owner's then the next, and
-- tries no more of an owner's once their tries took p_each_budget in all beyond 10 ms each (a try
-- takes a few ms unless it waits for a lock; the tables' tries counted apart: only their owner may
-- lock them), nor any once the sweep took p_budget. A view or table left is tried again at a later
-- sweep. Only the agent may call it (a role that may update
-- the leader lease, as the agents' roles must: checked for the session's role).
CREATE FUNCTION pgjobs.pgj_call_views_sweep_(p_views text[], p_budget interval,
    p_each_budget interval DEFAULT '500 ms', OUT dropped int, OUT held int, OUT deferred int)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
AS $$
DECLARE
    v record;
    tables oid[] := '{}';
    busy oid[]; -- what another session holds or waits for (pgj_call_held_)
    spent jsonb := '{}'; -- by owner OID, the seconds its tries took beyond 10 ms each
    began timestamptz := clock_timestamp();
    try timestamptz;
    tried int := 0;
BEGIN
    dropped := 0; held := 0; deferred := 0;
    IF NOT has_table_privilege(session_user, 'pgjobs.pgj_leader_', 'UPDATE') THEN
        RAISE EXCEPTION 'pgj_call_views_sweep_: only the agent drops the views of former calls'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF cardinality(p_views) > 200 THEN
        RAISE EXCEPTION 'pgj_call_views_sweep_: % views given, at most 200 at a time', cardinality(p_views)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    busy := pgjobs.pgj_call_held_();
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
             -- the owners in turns: the first view of each, then the second of each, ...
             ORDER BY row_number() OVER (PARTITION BY c.relowner ORDER BY c.relname), c.relowner LOOP
        IF v.view = ANY (busy) THEN
            held := held + 1; -- a run of the former call, or a role's lock: tried again later
            CONTINUE;
        ELSIF (tried > 0 AND clock_timestamp() - began > p_budget) OR (spent ->> v.owner::text)::float8 >= extract(epoch FROM p_each_budget) THEN
            deferred := deferred + 1;
            CONTINUE;
        END IF;
        try := clock_timestamp();
        tried := tried + 1;
        BEGIN
            -- locked first, then dropped only if nothing hangs on it but its own rule (a trigger
            -- would go with it, taking locks: a role's view with 20,000 of them made the drop run
            -- out of the lock table; locked, none can be added meanwhile). LOCK TABLE on a view
            -- would lock the tables it reads too, holding up the runs of the role's other calls:
            -- an ALTER VIEW that changes nothing locks the view alone.
            EXECUTE 'ALTER VIEW ' || v.name || ' ALTER COLUMN pgj_call_ DROP DEFAULT';
            -- (no CONTINUE in this block: the try's time is counted below)
            IF NOT EXISTS (SELECT FROM pg_depend d
                           WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = v.view
                             AND NOT (d.classid = 'pg_rewrite'::regclass -- its own rule, not one its role added
                                      AND d.objid IN (SELECT r.oid FROM pg_rewrite r WHERE r.ev_class = v.view AND r.rulename = '_RETURN'))
                             AND NOT (d.classid = 'pg_type'::regclass AND d.deptype = 'i'))
               AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = split_part(v.name, '.', 1) || '.' || split_part(v.name, '.', 2)) THEN
                EXECUTE 'DROP VIEW ' || v.name;
                IF v.args IS NOT NULL THEN
                    -- the view's row: its role deletes it at its next call
                    INSERT INTO pgjobs.pgj_call_gone_ VALUES (v.owner, v.args, v.hex) ON CONFLICT DO NOTHING;
                    tables := tables || v.args;
                END IF;
                dropped := dropped + 1;
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            held := held + 1; -- taken since the sweep began: tried again later
        WHEN OTHERS THEN
            NULL; -- renamed or dropped meanwhile, or its owner made something on it: tried again later
        END;
        spent := jsonb_set(spent, ARRAY[v.owner::text], to_jsonb(coalesce((spent ->> v.owner::text)::float8, 0)
                           + greatest(extract(epoch FROM clock_timestamp() - try) - 0.01, 0)));
    END LOOP;
    -- the tables of arguments of the views dropped, and those given, once no view reads them (a
    -- role's views all went with DROP OWNED), and nothing else hangs on them (a trigger would go
    -- with them, taking locks); the owners' tries counted anew: no other role may lock these
    busy := pgjobs.pgj_call_held_();
    spent := '{}';
    FOR v IN SELECT t.oid, t.oid::regclass::text AS name, t.relowner AS owner
             FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
             WHERE t.relkind = 'r' AND t.relname ~ '^args_[0-9a-f]{32}$' AND n.nspname ~ '^pgjobs_call_[0-9]+$'
               AND t.relowner::text = substr(n.nspname, 13)
               AND (t.oid = ANY (tables) OR (n.nspname || '.' || t.relname) = ANY (p_views))
               -- read by no view (else it is not locked: the runs of the calls that read it would wait)
               AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = t.oid
                                                        AND d.classid = 'pg_rewrite'::regclass)
             ORDER BY row_number() OVER (PARTITION BY t.relowner ORDER BY t.relname), t.relowner LOOP
        IF v.oid = ANY (busy) THEN
            held := held + 1;
            CONTINUE;
        ELSIF (tried > 0 AND clock_timestamp() - began > p_budget) OR (spent ->> v.owner::text)::float8 >= extract(epoch FROM p_each_budget) THEN
            deferred := deferred + 1;
            CONTINUE;
        END IF;
        try := clock_timestamp();
        tried := tried + 1;
        BEGIN
            -- locked by an ALTER TABLE that changes nothing: LOCK TABLE on what its role made a view
            -- (PostgreSQL 15 lets it) would lock what that view reads, as the definer
            EXECUTE 'ALTER TABLE ONLY ' || v.name || ' ALTER COLUMN id DROP DEFAULT';
            -- unless read by a view, or something of its role's hangs on it
            IF NOT EXISTS (SELECT FROM pg_depend d
                           WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = v.oid
                             AND NOT (d.classid = 'pg_type'::regclass AND d.deptype = 'i')
                             AND NOT (d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
                                      AND d.objid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = v.oid
                                                      UNION ALL SELECT t.reltoastrelid FROM pg_class t WHERE t.oid = v.oid))
                             AND NOT (d.classid = 'pg_constraint'::regclass AND d.deptype = 'a'
                                      AND d.objid IN (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = v.oid AND c.contype = 'p'))) THEN
                EXECUTE 'DROP TABLE ' || v.name;
                DELETE FROM pgjobs.pgj_call_gone_ WHERE gonetable = v.oid;
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            held := held + 1;
        WHEN OTHERS THEN
            NULL; -- in use, or a view was made on it meanwhile: tried again later
        END;
        spent := jsonb_set(spent, ARRAY[v.owner::text], to_jsonb(coalesce((spent ->> v.owner::text)::float8, 0)
                           + greatest(extract(epoch FROM clock_timestamp() - try) - 0.01, 0)));
    END LOOP;
    -- the schema of a role whose jobs are all dropped, once empty: the role may then be dropped
    FOR v IN SELECT quote_ident(n.nspname) AS name FROM pg_namespace n
             WHERE n.nspname ~ '^pgjobs_call_[0-9]+$'
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
    -- the rows of tables dropped otherwise (DROP OWNED BY)
    DELETE FROM pgjobs.pgj_call_gone_ g WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = g.gonetable);
END
$$;

-- version 16's drop, which waited for each view, is called no longer: no role may. It is not
-- dropped: a role's view over it would make the upgrade fail.
REVOKE ALL ON FUNCTION pgjobs.pgj_call_views_drop_(text[]) FROM PUBLIC;
-- the agent's (the sweep checks its caller)
REVOKE ALL ON FUNCTION pgjobs.pgj_call_views_sweep_(text[], interval, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgjobs.pgj_call_views_sweep_(text[], interval, interval) TO PUBLIC;
