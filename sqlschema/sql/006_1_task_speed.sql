-- pgjobs schema version 6, part 1: the task table's bookkeeping at speed. The ends of a batch are
-- written by one set-based function instead of a call each; the claim counts each group's running
-- tasks and finds its first waiting row once per group, not once per candidate; the checks of the
-- table's intervals are inlined (their operators named in full instead of a search_path setting);
-- the agent's own updates skip the expiry of rows that are not waiting.
SET LOCAL search_path = pg_catalog, pg_temp;

-- As in version 5, inlinable: no SET clause, every function and operator qualified, so that the
-- body means the same under any search_path of the session that writes a row.
CREATE OR REPLACE FUNCTION pgjobs.pgj_task_interval_ok_(p interval, p_max_days int) RETURNS boolean
LANGUAGE sql IMMUTABLE
AS $$
    SELECT (pg_catalog.extract('year', p) OPERATOR(pg_catalog.>=) 0)
       AND (pg_catalog.extract('month', p) OPERATOR(pg_catalog.>=) 0)
       AND (pg_catalog.extract('day', p) OPERATOR(pg_catalog.>=) 0)
       AND (pg_catalog.extract('hour', p) OPERATOR(pg_catalog.>=) 0)
       AND (pg_catalog.extract('minute', p) OPERATOR(pg_catalog.>=) 0)
       AND (pg_catalog.extract('second', p) OPERATOR(pg_catalog.>=) 0)
       AND ((((pg_catalog.extract('year', p) OPERATOR(pg_catalog.*) 12) OPERATOR(pg_catalog.+) pg_catalog.extract('month', p))
               OPERATOR(pg_catalog.*) 30)
            OPERATOR(pg_catalog.+) pg_catalog.extract('day', p)
            OPERATOR(pg_catalog.+) ((((pg_catalog.extract('hour', p) OPERATOR(pg_catalog.*) 3600)
                                      OPERATOR(pg_catalog.+) (pg_catalog.extract('minute', p) OPERATOR(pg_catalog.*) 60))
                                     OPERATOR(pg_catalog.+) pg_catalog.extract('second', p))
                                    OPERATOR(pg_catalog./) 86400))
           OPERATOR(pg_catalog.<=) p_max_days::pg_catalog.numeric
$$;

-- As in version 5, but the agent's writes compute the expiry only of waiting rows (a claim, a
-- start and an end make a row TAKE, WORK, DONE or FAIL: it expires at no time).
CREATE OR REPLACE FUNCTION pgjobs.pgj_task_update_() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF pgjobs.pgj_task_agent_writes_() THEN
        IF NEW.state = 'PLAN' THEN
            NEW.expires := pgjobs.pgj_task_expires_(NEW.state, NEW.plan, NEW.active, NEW.repeat, NEW.max);
        ELSE
            NEW.expires := NULL;
        END IF;
        RETURN NEW;
    END IF;
    NEW.expires := pgjobs.pgj_task_expires_(NEW.state, NEW.plan, NEW.active, NEW.repeat, NEW.max);
    IF OLD.state IN ('TAKE', 'WORK') THEN
        RAISE EXCEPTION 'task %: it is %, the agent''s until it ends: it cannot be changed now', OLD.id, OLD.state
            USING ERRCODE = 'object_in_use', HINT = 'wait until it is DONE, FAIL or GONE; a timeout ends a run that is too long';
    END IF;
    IF NEW.owner IS DISTINCT FROM OLD.owner THEN
        RAISE EXCEPTION 'task %: the owner (%) cannot be changed', OLD.id, OLD.owner
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (NEW.attempt, NEW.pid, NEW.start, NEW.stop) IS DISTINCT FROM (OLD.attempt, OLD.pid, OLD.start, OLD.stop) THEN
        RAISE EXCEPTION 'task %: attempt, pid, start and stop are the agent''s to write', OLD.id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.plan IS DISTINCT FROM OLD.plan OR NEW.origin IS DISTINCT FROM OLD.origin THEN
        NEW.origin := NEW.plan; -- planned anew: the grid of a repeat starts there
    END IF;
    IF NEW.state IS DISTINCT FROM OLD.state AND NOT (
        (OLD.state = 'PLAN' AND NEW.state = 'STOP') OR (OLD.state = 'STOP' AND NEW.state = 'PLAN')
        OR (OLD.state IN ('DONE', 'FAIL', 'GONE') AND NEW.state = 'PLAN')) THEN
        RAISE EXCEPTION 'task %: the state cannot change from % to %', OLD.id, OLD.state, NEW.state
            USING ERRCODE = 'check_violation',
                  HINT = 'a task goes from PLAN to STOP (park it), from STOP to PLAN (release it), or from DONE, FAIL or GONE to PLAN (run it again)';
    END IF;
    RETURN NEW;
END
$$;

-- pgj_task_ends_ writes the ends of a batch of runs (element i of each array is one end) in a few
-- statements for the whole batch: as version 5's pgj_task_end_ wrote each, with p_retry_at the task
-- goes back to PLAN at that time and keeps its error; else it ends DONE (no error) or FAIL, a
-- repeating task gets its next row (parent = this id, plan p_next_plan), the next waiting task of
-- a negative-max group is planned no earlier than p_space_at, and a row that produced nothing
-- (output and error NULL) is deleted when its delete is on. With p_gone, a one-shot task claimed
-- ahead that waited for a slot past its plan + active ends GONE instead of running. An attempt whose proof committed ends
-- DONE whatever the agent saw: an error then means the agent lost the session after the commit
-- (the task's backend ended, the server restarted, or it took over from an agent that died), and
-- the error says the output was lost; its proof is forgotten with the end. Returns, for each end, written:
-- true, false when the row is no longer in that attempt (dropped), NULL when another session holds
-- it locked (the agent writes it later).
CREATE FUNCTION pgjobs.pgj_task_ends_(p_epoch bigint, p_ids bigint[], p_attempts int[], p_starts timestamptz[], p_stops timestamptz[],
                                      p_outputs text[], p_errors text[], p_retry_ats timestamptz[],
                                      p_next_plans timestamptz[], p_space_ats timestamptz[], p_gones boolean[])
RETURNS TABLE (id bigint, attempt int, written boolean)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
DECLARE
    locked bigint[];
    proven bigint[];
    s record;
    head bigint;
BEGIN
    PERFORM pgjobs.pgj_task_lead_(p_epoch);
    SELECT coalesce(array_agg(l.id), '{}') INTO locked FROM (
        SELECT x.id FROM pgjobs.task x JOIN unnest(p_ids, p_attempts) AS e(id, attempt) ON e.id = x.id AND e.attempt = x.attempt
        WHERE x.state IN ('TAKE', 'WORK') FOR UPDATE OF x SKIP LOCKED) l;
    -- locked holds the ids whose row is in the attempt of an end of the batch; below, each end is
    -- matched on (id, attempt), so that a stale end of the same id (an earlier attempt) is not.
    -- An attempt whose proof committed ends DONE, whatever the agent saw.
    WITH gone AS (
        DELETE FROM pgjobs_agent.task_proof p USING unnest(p_ids, p_attempts) AS e(id, attempt)
        WHERE p.id = e.id AND p.attempt = e.attempt AND p.id = ANY (locked) RETURNING p.id)
    SELECT coalesce(array_agg(gone.id), '{}') INTO proven FROM gone;
    UPDATE pgjobs.task x
    SET state = CASE WHEN e.gone THEN 'GONE'
                     WHEN e.error IS NULL OR x.id = ANY (proven) THEN 'DONE'
                     WHEN e.retry_at IS NOT NULL THEN 'PLAN' ELSE 'FAIL' END::pgjobs.task_state,
        plan = CASE WHEN NOT e.gone AND e.error IS NOT NULL AND e.retry_at IS NOT NULL AND x.id <> ALL (proven) THEN e.retry_at ELSE x.plan END,
        start = e.start, stop = e.stop, output = e.output,
        error = CASE WHEN e.error IS NOT NULL AND x.id = ANY (proven)
                     THEN 'the task''s transaction committed, but its output was lost: ' || e.error ELSE e.error END
    FROM unnest(p_ids, p_attempts, p_starts, p_stops, p_outputs, p_errors, p_retry_ats, p_gones)
         AS e(id, attempt, start, stop, output, error, retry_at, gone)
    WHERE x.id = e.id AND x.attempt = e.attempt AND x.id = ANY (locked);
    -- The next row of each repeating task that ended (not one put back for a retry).
    INSERT INTO pgjobs.task (parent, plan, active, live, repeat, timeout, count, max, delete, drift, header, string,
                             delimiter, escape, quote, "null", save, data, "group", input, remote, owner, priority,
                             retries, retry_delay, origin)
    SELECT t.id, e.next_plan, t.active, t.live, t.repeat, t.timeout, t.count, t.max, t.delete, t.drift, t.header, t.string,
           t.delimiter, t.escape, t.quote, t."null", t.save, t.data, t."group", t.input, t.remote, t.owner, t.priority,
           t.retries, t.retry_delay, CASE WHEN t.drift THEN e.next_plan ELSE coalesce(t.origin, t.plan) END
    FROM pgjobs.task t JOIN unnest(p_ids, p_attempts, p_next_plans) AS e(id, attempt, next_plan) ON e.id = t.id AND e.attempt = t.attempt
    WHERE t.id = ANY (locked) AND t.state IN ('DONE', 'FAIL') AND t.repeat > interval '0' AND e.next_plan IS NOT NULL
    ORDER BY t.id;
    -- The next waiting task of each negative-max group that ended a task: no earlier than its pause.
    FOR s IN SELECT t.owner, t."group", coalesce(t.remote, '') AS remote, max(e.space_at) AS space_at
             FROM pgjobs.task t JOIN unnest(p_ids, p_attempts, p_space_ats) AS e(id, attempt, space_at) ON e.id = t.id AND e.attempt = t.attempt
             WHERE t.id = ANY (locked) AND t.state IN ('DONE', 'FAIL') AND t.max < 0 AND e.space_at IS NOT NULL
             GROUP BY 1, 2, 3 LOOP
        SELECT n.id INTO head FROM pgjobs.task n
        WHERE n.state = 'PLAN' AND n.owner = s.owner AND n."group" = s."group" AND coalesce(n.remote, '') = s.remote
        ORDER BY n.priority DESC, n.max DESC, n.id LIMIT 1;
        UPDATE pgjobs.task x SET plan = s.space_at
        WHERE x.id = (SELECT y.id FROM pgjobs.task y WHERE y.id = head FOR UPDATE SKIP LOCKED) AND x.plan < s.space_at;
    END LOOP;
    -- The rows that produced nothing, when their delete is on.
    DELETE FROM pgjobs.task x
    WHERE x.id = ANY (locked) AND x.state IN ('DONE', 'FAIL') AND x.delete AND x.output IS NULL AND x.error IS NULL;
    RETURN QUERY
    SELECT e.id, e.attempt,
           CASE WHEN e.id = ANY (locked) AND EXISTS (SELECT FROM pgjobs.task x WHERE x.id = e.id AND x.attempt = e.attempt) THEN true
                WHEN e.id = ANY (locked) THEN false
                WHEN EXISTS (SELECT FROM pgjobs.task x WHERE x.id = e.id AND x.attempt = e.attempt AND x.state IN ('TAKE', 'WORK')) THEN NULL
                ELSE false END
    FROM unnest(p_ids, p_attempts) AS e(id, attempt);
END
$$;
-- pgj_task_ends_ replaces it.
DROP FUNCTION pgjobs.pgj_task_end_(bigint, bigint, int, timestamptz, timestamptz, text, text, timestamptz, timestamptz, timestamptz);
REVOKE ALL ON FUNCTION pgjobs.pgj_task_ends_(bigint, bigint[], int[], timestamptz[], timestamptz[], text[], text[], timestamptz[], timestamptz[], timestamptz[], boolean[]) FROM PUBLIC;

-- Where each role's walk over its groups stopped (pgj_task_walk_), so that the next claim goes on
-- from there and every group is reached in turn.
CREATE TABLE pgjobs_agent.task_walk (
    owner oid PRIMARY KEY,
    "group" text NOT NULL,
    remote text NOT NULL
);
REVOKE ALL ON pgjobs_agent.task_walk FROM PUBLIC;

-- pgj_task_walk_ returns the first waiting rows of up to p_want of role p_owner's groups that are
-- ready (planned by now) and have a free place, walking at most p_steps of its groups with
-- waiting rows, in the order of their names, on from where the last walk stopped. Each step is
-- two index probes: however many rows wait in full groups, their groups are passed in one step
-- each, and the tasks of free groups are found behind them.
CREATE FUNCTION pgjobs.pgj_task_walk_(p_owner oid, p_want int, p_steps int) RETURNS SETOF bigint
LANGUAGE plpgsql ROWS 8
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    g text;
    r text;
    start_g text;
    start_r text;
    wrapped boolean := false;
    head record;
    busy bigint;
    taken int := 0;
BEGIN
    SELECT w."group", w.remote INTO start_g, start_r FROM pgjobs_agent.task_walk w WHERE w.owner = p_owner;
    g := start_g;
    r := start_r;
    FOR step IN 1 .. p_steps LOOP
        IF g IS NULL THEN
            SELECT t."group", coalesce(t.remote, '') INTO g, r FROM pgjobs.task t
            WHERE t.state = 'PLAN' AND t.owner = p_owner
            ORDER BY t."group", coalesce(t.remote, '') LIMIT 1;
        ELSE
            SELECT t."group", coalesce(t.remote, '') INTO g, r FROM pgjobs.task t
            WHERE t.state = 'PLAN' AND t.owner = p_owner AND (t."group", coalesce(t.remote, '')) > (g, r)
            ORDER BY t."group", coalesce(t.remote, '') LIMIT 1;
            IF NOT FOUND THEN
                IF wrapped OR start_g IS NULL THEN
                    EXIT;
                END IF;
                wrapped := true; -- on from the first group, in this same step
                SELECT t."group", coalesce(t.remote, '') INTO g, r FROM pgjobs.task t
                WHERE t.state = 'PLAN' AND t.owner = p_owner
                ORDER BY t."group", coalesce(t.remote, '') LIMIT 1;
            END IF;
        END IF;
        EXIT WHEN g IS NULL OR (wrapped AND (g, r) > (start_g, start_r)); -- the start's group once more: its head may not have been taken
        SELECT t.id, t.plan, t.max INTO head FROM pgjobs.task t
        WHERE t.state = 'PLAN' AND t.owner = p_owner AND t."group" = g AND coalesce(t.remote, '') = r
        ORDER BY t.priority DESC, t.max DESC, t.id LIMIT 1;
        IF head.plan <= now() THEN
            SELECT count(*) INTO busy FROM pgjobs.task b
            WHERE b.state IN ('TAKE', 'WORK') AND b.owner = p_owner AND b."group" = g AND coalesce(b.remote, '') = r;
            IF (head.max >= 0 AND busy <= head.max) OR (head.max < 0 AND busy = 0) THEN
                RETURN NEXT head.id;
                taken := taken + 1;
                EXIT WHEN taken >= p_want;
            END IF;
        END IF;
    END LOOP;
    IF g IS NOT NULL THEN
        INSERT INTO pgjobs_agent.task_walk (owner, "group", remote) VALUES (p_owner, g, r)
        ON CONFLICT (owner) DO UPDATE SET "group" = excluded."group", remote = excluded.remote;
    END IF;
END
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_task_walk_(oid, int, int) FROM PUBLIC;

-- pgj_task_claim_ as in version 5 (see there), with each group's running tasks and first waiting
-- row, and each role's claimed or running tasks, counted once instead of once per candidate; and
-- among each role's candidates the first rows of its groups that have a free place, found by a
-- walk over its groups (pgj_task_walk_), so that a backlog in full groups, however long, does not
-- hide the tasks of its free groups. It takes the tasks whose run ended and whose end the agent has
-- yet to write (p_ended), which do not count against their role's cap.
DROP FUNCTION pgjobs.pgj_task_claim_(bigint, int, int);
CREATE FUNCTION pgjobs.pgj_task_claim_(p_epoch bigint, p_slots int, p_owner_cap int, p_ended bigint[])
RETURNS TABLE (id bigint, attempt int, owner oid, owner_name text, owner_super boolean, owner_login boolean,
               input text, timeout interval, plan timestamptz, repeat interval, drift boolean, max int,
               retries int, retry_delay interval, save boolean, header boolean, string boolean,
               delimiter text, escape text, quote text, "null" text, remote text, count int, live interval,
               origin timestamptz, expires timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
BEGIN
    PERFORM pgjobs.pgj_task_lead_(p_epoch);
    UPDATE pgjobs.task t SET state = 'GONE', error = 'task not active', start = t.plan + t.active, stop = t.plan + t.active
    WHERE t.id IN (SELECT e.id FROM pgjobs.task e
                   WHERE e.state = 'PLAN' AND e.expires <= now()
                   FOR UPDATE SKIP LOCKED);
    IF p_slots <= 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    WITH RECURSIVE owners AS (
        (SELECT t.owner AS o FROM pgjobs.task t WHERE t.state = 'PLAN' ORDER BY t.owner LIMIT 1)
        UNION ALL
        SELECT n.o FROM owners,
        LATERAL (SELECT t.owner AS o FROM pgjobs.task t WHERE t.state = 'PLAN' AND t.owner > owners.o ORDER BY t.owner LIMIT 1) n
    ),
    -- Each role's candidates: its ready rows among its first 256 waiting rows in claim order (its
    -- priorities), and its p_slots ready rows planned first (so that none waits forever behind
    -- rows planned later). A role's backlog, its groups and its future rows cost the claim no
    -- more than that.
    candidates AS (
        SELECT DISTINCT ON (c.id) c.id, c.o, c.g, c.r, c.priority, c.max
        FROM owners, LATERAL (
            (SELECT w.id, w.owner AS o, w."group" AS g, coalesce(w.remote, '') AS r, w.priority, w.max
             FROM (SELECT x.* FROM pgjobs.task x WHERE x.state = 'PLAN' AND x.owner = owners.o
                   ORDER BY x.priority DESC, x.max DESC, x.id LIMIT 256) w
             WHERE w.plan <= now() LIMIT p_slots)
            UNION ALL
            (SELECT x.id, x.owner, x."group", coalesce(x.remote, ''), x.priority, x.max FROM pgjobs.task x
             WHERE x.state = 'PLAN' AND x.owner = owners.o AND x.plan <= now() ORDER BY x.plan LIMIT p_slots)
            UNION ALL
            -- and the first rows of its ready groups with a free place, found past its full ones
            (SELECT x.id, x.owner, x."group", coalesce(x.remote, ''), x.priority, x.max
             FROM pgjobs.pgj_task_walk_(owners.o, p_slots, 64) AS w(id) JOIN pgjobs.task x ON x.id = w.id)
        ) c
    ),
    -- Each candidate group's running tasks, and its first waiting row, ready or not: a
    -- negative-max group waits for it, planned by the end of the task before it, and no other row
    -- of the group passes it. Once per group, however many of its rows are candidates.
    groups AS (
        SELECT g.o, g.g, g.r, busy.n, head.id AS head
        FROM (SELECT DISTINCT candidates.o, candidates.g, candidates.r FROM candidates) g,
        LATERAL (SELECT count(*) AS n FROM pgjobs.task b
                 WHERE b.state IN ('TAKE', 'WORK') AND b.owner = g.o AND b."group" = g.g AND coalesce(b.remote, '') = g.r) busy,
        LATERAL (SELECT t.id FROM pgjobs.task t
                 WHERE t.state = 'PLAN' AND t.owner = g.o AND t."group" = g.g AND coalesce(t.remote, '') = g.r
                 ORDER BY t.priority DESC, t.max DESC, t.id LIMIT 1) head
    ),
    ranked AS (
        SELECT c.id, c.priority, c.max, c.o,
               bool_and(CASE WHEN c.max >= 0 THEN gs.n + c.i <= c.max ELSE gs.n = 0 AND c.i = 0 AND c.id = gs.head END)
                   OVER (PARTITION BY c.o, c.g, c.r ORDER BY c.i) AS fits
        FROM (SELECT candidates.*, row_number() OVER (PARTITION BY candidates.o, candidates.g, candidates.r
                                                      ORDER BY candidates.priority DESC, candidates.max DESC, candidates.id) - 1 AS i
              FROM candidates) c
        JOIN groups gs ON gs.o = c.o AND gs.g = c.g AND gs.r = c.r
    ),
    -- Each role's tasks claimed or running, once per role, but for those whose run ended
    -- (p_ended: the calling agent has their ends yet to write).
    holding AS (
        SELECT o.o, (SELECT count(*) FROM pgjobs.task b WHERE b.state IN ('TAKE', 'WORK') AND b.owner = o.o AND b.id <> ALL (p_ended)) AS n
        FROM (SELECT DISTINCT candidates.o FROM candidates) o
    ),
    turns AS (
        SELECT ranked.id, ranked.priority, ranked.max, ranked.o,
               row_number() OVER (PARTITION BY ranked.o ORDER BY ranked.priority DESC, ranked.max DESC, ranked.id) AS turn
        FROM ranked WHERE fits
    ),
    -- The candidates are locked before the limit, so that a row another session holds locked (its
    -- owner's SELECT ... FOR UPDATE) takes no place in it; the others are let go at the commit.
    lockable AS (
        SELECT t.id FROM pgjobs.task t
        WHERE t.id IN (SELECT turns.id FROM turns) AND t.state = 'PLAN' AND t.plan <= now()
          AND (t.expires IS NULL OR t.expires > now()) -- committed after the expiry above: expired all the same
        FOR UPDATE SKIP LOCKED
    ),
    locked AS (
        SELECT turns.id FROM turns JOIN lockable ON lockable.id = turns.id JOIN holding ON holding.o = turns.o
        WHERE turns.turn <= p_owner_cap - holding.n
        ORDER BY turns.turn, turns.priority DESC, turns.max DESC, turns.id LIMIT p_slots
    ),
    claimed AS (
        UPDATE pgjobs.task t SET state = 'TAKE', attempt = t.attempt + 1, start = NULL, stop = NULL, pid = NULL,
                                 output = NULL, error = NULL
        FROM locked WHERE t.id = locked.id
        RETURNING t.*
    )
    SELECT c.id, c.attempt, c.owner::oid, r.rolname::text, coalesce(r.rolsuper, false),
           coalesce(r.rolcanlogin AND (r.rolvaliduntil IS NULL OR r.rolvaliduntil > now()), false),
           c.input, c.timeout, c.plan, c.repeat, c.drift, c.max, c.retries, c.retry_delay, c.save,
           c.header, c.string, c.delimiter::text, c.escape::text, c.quote::text, c."null", c.remote, c.count, c.live,
           coalesce(c.origin, c.plan),
           -- when it goes GONE if it has not started by then (it may wait for a slot, claimed ahead)
           CASE WHEN c.repeat = interval '0' AND c.max >= 0 THEN c.plan + c.active END
    FROM claimed c LEFT JOIN pg_catalog.pg_roles r ON r.oid = c.owner
    ORDER BY c.priority DESC, c.max DESC, c.id;
END
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_task_claim_(bigint, int, int, bigint[]) FROM PUBLIC;
