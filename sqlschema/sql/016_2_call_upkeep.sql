-- pgjobs schema version 16, continued: what records, guards and drops the views of calls, for the
-- views of this version (a superuser's, reading their arguments from a table) and those of version
-- 15 (the role's own, its arguments in the view), and the call schemas given to the superuser.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_job_bind_ records view p_view as the call of the caller's job named p_name (the stamp says
-- who calls; a superuser too binds only a job of its own). The view must be one pgj_call_store_
-- made for the caller: the caller's, in the caller's call schema, a superuser's (where no role
-- may create), calling the job's function. The view the job had stays until the agent drops it
-- (pgj_call_views_drop_): dropping it here would wait for the runs that use it.
CREATE OR REPLACE FUNCTION pgjobs.pgj_job_bind_(p_function text, p_name text, p_view text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgjobs.pgj_caller_take_(p_function);
    job pgjobs.pgj_job_;
    bound text;
BEGIN
    SELECT * INTO job FROM pgjobs.pgj_job_ WHERE jobname = p_name AND jobownerid = caller FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: argument 1: job "%" of role % does not exist', p_function, p_name, pg_get_userbyid(caller)
            USING ERRCODE = 'undefined_object';
    END IF;
    SELECT n.nspname || '.' || c.relname INTO bound
    FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid JOIN pg_rewrite r ON r.ev_class = c.oid
    WHERE n.nspname = 'pgjobs_call_' || caller AND c.relkind = 'v'
      AND (SELECT rolsuper FROM pg_roles WHERE oid = n.nspowner) AND c.relowner = caller
      AND p_view ~ '^pgjobs_call_[0-9]+\.call_[0-9a-f]{32}$'
      AND n.nspname = split_part(p_view, '.', 1) AND c.relname = split_part(p_view, '.', 2)
      AND substring(r.ev_action::text FROM ':targetList \(\{TARGETENTRY :expr \{NULLTEST :arg \{FUNCEXPR :funcid ([0-9]+) ')::oid = job.jobfuncoid;
    IF bound IS NULL THEN
        RAISE EXCEPTION '%: % is not a view of role %''s call schema calling the job''s function', p_function, p_view, pg_get_userbyid(caller)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'call the public pgj_* function, not the internal one';
    END IF;
    UPDATE pgjobs.pgj_job_ SET jobview = bound WHERE jobid = job.jobid;
END
$$;

-- pgj_run_view_check_ is the agent's guard before each run of a bound call, sent on the run's
-- session in the same round trip as SELECT pgj_call_ FROM p_view, and run before it: the session
-- must be of the job's owner, role p_owner (named p_owner_name), which still exists, may log in
-- and has not expired; and p_view must be a view of the owner's call schema, which a superuser
-- owns (no role may create there), and the view the owner's.
CREATE OR REPLACE FUNCTION pgjobs.pgj_run_view_check_(p_owner oid, p_owner_name text, p_view text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
    v record;
BEGIN
    SELECT rolname, rolcanlogin, rolvaliduntil INTO r FROM pg_roles WHERE oid = p_owner;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the job''s owner % (role OID %) was dropped: the job does not run', p_owner_name, p_owner
            USING ERRCODE = 'undefined_object', HINT = 'a superuser may drop the job: SELECT pgj_drop_job(name)';
    ELSIF NOT r.rolcanlogin THEN
        RAISE EXCEPTION 'the job''s owner % may no longer log in: the job does not run', r.rolname
            USING ERRCODE = 'insufficient_privilege', HINT = format('ALTER ROLE %I LOGIN lets it run again', r.rolname);
    ELSIF r.rolvaliduntil < now() THEN
        RAISE EXCEPTION 'the job''s owner % expired at %: the job does not run', r.rolname, r.rolvaliduntil
            USING ERRCODE = 'insufficient_privilege', HINT = format('ALTER ROLE %I VALID UNTIL ''infinity'' lets it run again', r.rolname);
    ELSIF session_user <> r.rolname OR current_user <> r.rolname THEN
        RAISE EXCEPTION 'this session runs as role %, not as the job''s owner %: the job does not run', current_user, r.rolname
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT (SELECT rolsuper FROM pg_roles WHERE oid = n.nspowner) AS schema_ok, c.relowner,
           c.relowner = p_owner AS view_ok, c.relkind INTO v
    FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = split_part(p_view, '.', 2)
    WHERE n.nspname = 'pgjobs_call_' || p_owner AND split_part(p_view, '.', 1) = n.nspname;
    IF NOT FOUND OR v.relowner IS NULL THEN
        RAISE EXCEPTION 'the view % of the job''s call is gone (dropped with an object the call used, or by its owner): the job does not run', p_view
            USING ERRCODE = 'undefined_table', HINT = format('its owner %s sets the call again with pgj_update_job', r.rolname);
    ELSIF NOT v.schema_ok OR NOT v.view_ok OR v.relkind <> 'v' THEN
        RAISE EXCEPTION 'the view % of the job''s call, or its schema, is no longer one pgjobs made for the job''s owner %: the job does not run', p_view, r.rolname
            USING ERRCODE = 'insufficient_privilege', HINT = format('its owner %s sets the call again with pgj_update_job', r.rolname);
    END IF;
END
$$;

-- The rows of arguments of the views the agent dropped, which their roles delete at their next
-- call (pgj_call_gone_list_, pgj_call_gone_done_): the agent may read, write or plan no query over a role's table,
-- whose triggers, and the expressions of its statistics objects, would run as the definer.
CREATE TABLE pgjobs.pgj_call_gone_ (
    goneowner oid NOT NULL,
    gonetable oid NOT NULL,
    goneid text COLLATE "C" NOT NULL,
    PRIMARY KEY (goneowner, gonetable, goneid)
);
REVOKE ALL ON pgjobs.pgj_call_gone_ FROM PUBLIC;

-- pgj_call_gone_list_ returns the rows of the caller's tables of arguments (the stamp says who
-- calls) whose views the agent dropped, for the caller to delete, and pgj_call_gone_done_ forgets
-- those of table p_table the caller deleted (a table it broke keeps its rows in the queue).
CREATE FUNCTION pgjobs.pgj_call_gone_list_(p_function text, OUT tab oid, OUT ids text[]) RETURNS SETOF record
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgjobs.pgj_caller_take_(p_function);
BEGIN
    RETURN QUERY SELECT gonetable, array_agg(goneid) FROM pgjobs.pgj_call_gone_ WHERE goneowner = caller GROUP BY gonetable;
END
$$;

CREATE FUNCTION pgjobs.pgj_call_gone_done_(p_function text, p_table oid, p_ids text[]) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgjobs.pgj_caller_take_(p_function);
BEGIN
    DELETE FROM pgjobs.pgj_call_gone_ WHERE goneowner = caller AND gonetable = p_table AND goneid = ANY (p_ids);
END
$$;

-- pgj_call_views_drop_ drops those of views p_views (which the agent found no job used, a while
-- before) that no job uses now, at most 200, with their rows of arguments, then the tables of
-- arguments no view reads (theirs, and those p_views names: pgjobs_call_<OID>.args_<hex>), then
-- the call schemas left empty of roles that have no job, and returns
-- how many views it dropped. A view another session holds (a run of a job's former call) is left
-- for later: the drop waits at most 100 ms for it. Only the agent may call it (a role that may
-- update the leader lease, as the agents' roles must: checked for the session's role).
CREATE OR REPLACE FUNCTION pgjobs.pgj_call_views_drop_(p_views text[]) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
AS $$
DECLARE
    v record;
    tables oid[] := '{}';
    dropped int := 0;
BEGIN
    IF NOT has_table_privilege(session_user, 'pgjobs.pgj_leader_', 'UPDATE') THEN
        RAISE EXCEPTION 'pgj_call_views_drop_: only the agent drops the views of former calls'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF cardinality(p_views) > 200 THEN
        RAISE EXCEPTION 'pgj_call_views_drop_: % views given, at most 200 at a time', cardinality(p_views)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
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
               AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = w.view) LOOP
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
        EXCEPTION WHEN OTHERS THEN
            NULL; -- in use, renamed or dropped meanwhile, or its owner made something on it: tried again later
        END;
    END LOOP;
    -- the tables of arguments of the views dropped, and those given, once no view reads them (a
    -- role's views all went with DROP OWNED), and nothing else hangs on them (a trigger would go
    -- with them, taking locks)
    FOR v IN SELECT t.oid, t.oid::regclass::text AS name
             FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
             WHERE t.relkind = 'r' AND t.relname ~ '^args_[0-9a-f]{32}$' AND n.nspname ~ '^pgjobs_call_[0-9]+$'
               AND t.relowner::text = substr(n.nspname, 13)
               AND (t.oid = ANY (tables) OR (n.nspname || '.' || t.relname) = ANY (p_views))
               -- read by no view (else it is not locked: the runs of the calls that read it would wait)
               AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = t.oid
                                                        AND d.classid = 'pg_rewrite'::regclass) LOOP
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
        EXCEPTION WHEN OTHERS THEN
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

-- The call schemas of version 15, their roles' own, go to the superuser that upgrades, with USAGE
-- for their role: the role may no longer create in them. Its views stay its own, and keep the
-- arguments of its calls in their rules until it sets the calls again.
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT n.nspname, n.nspowner FROM pg_namespace n
             WHERE n.nspname ~ '^pgjobs_call_[0-9]+$' AND n.nspowner::text = substr(n.nspname, 13) LOOP
        EXECUTE format('ALTER SCHEMA %I OWNER TO %I', s.nspname, current_user);
        PERFORM pgjobs.pgj_call_acl_clear_('SCHEMA', quote_ident(n.nspname), n.nspacl, n.nspowner)
        FROM pg_namespace n WHERE n.nspname = s.nspname;
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', s.nspname, pg_get_userbyid(s.nspowner));
    END LOOP;
    FOR s IN SELECT j.jobname, coalesce(pg_get_userbyid(j.jobownerid)::text, j.jobowner) AS owner, j.jobview
             FROM pgjobs.pgj_job_ j JOIN pg_namespace n ON n.nspname = split_part(j.jobview, '.', 1)
             JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = split_part(j.jobview, '.', 2)
             WHERE c.relowner = j.jobownerid ORDER BY 2, 1 LOOP
        RAISE WARNING 'job % of role %: the arguments of its call are in the rule of view %, which every role can read (pg_get_viewdef). Its owner sets the call again with pgj_update_job, which keeps them where only superusers read',
            s.jobname, s.owner, s.jobview;
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION pgjobs.pgj_call_acl_clear_(text, text, aclitem[], oid), pgjobs.pgj_call_space_(text, oid),
    pgjobs.pgj_type_regbase_(oid), pgjobs.pgj_type_holds_reg_(oid), pgjobs.pgj_call_reg_refused_(oid, regtype, oid),
    pgjobs.pgj_call_args_(text, text, oid), pgjobs.pgj_call_store_(text, oid, text[], boolean, oid[], oid[]),
    pgjobs.pgj_call_gone_list_(text), pgjobs.pgj_call_gone_done_(text, oid, text[]) FROM PUBLIC;
-- called by pgj_call_bind_, as the caller (the definers take the caller's stamp); they read
-- catalogs only, but pgj_type_reg_ (version 14), which pgj_type_holds_reg_ calls
GRANT EXECUTE ON FUNCTION pgjobs.pgj_call_args_(text, text, oid), pgjobs.pgj_call_store_(text, oid, text[], boolean, oid[], oid[]),
    pgjobs.pgj_call_gone_list_(text), pgjobs.pgj_call_gone_done_(text, oid, text[]), pgjobs.pgj_type_regbase_(oid), pgjobs.pgj_type_holds_reg_(oid), pgjobs.pgj_type_reg_(oid) TO PUBLIC;
