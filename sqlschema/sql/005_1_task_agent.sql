-- pgjobs schema version 5, part 1: what the active agent runs on the task table. Each function
-- checks that its epoch is the lease's (else SQLSTATE PGJ01: the caller lost the lead), marks its
-- writes as the agent's (no notification wakes the agent for them, no user rule applies), and
-- checks each row's attempt, so that a late result never overwrites a newer attempt. A row another
-- session has locked (its owner may SELECT ... FOR UPDATE its own tasks) is skipped, never waited
-- for. None waits for a lock longer than 200 ms: a role that holds the task table up (a lock queued behind an open
-- transaction) fails them at once and the agent tries again, its sessions free meanwhile for the
-- watch that ends such a role's session.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_task_lead_ fails unless p_epoch is the lease's, and marks the transaction's writes as the agent's.
CREATE FUNCTION pgjobs.pgj_task_lead_(p_epoch bigint) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT EXISTS (SELECT FROM pgjobs.pgj_leader_ WHERE epoch = p_epoch) THEN
        RAISE EXCEPTION 'epoch % no longer holds the lease', p_epoch USING ERRCODE = 'PGJ01';
    END IF;
    PERFORM set_config('pgjobs.task_writer', 'agent', true);
END
$$;

-- pgj_task_claim_ ends the one-shot tasks that waited past plan + active (GONE, 'task not active'),
-- then claims up to p_slots ready tasks (PLAN, plan reached) for the epoch: TAKE, the next attempt.
-- A group is the triple (owner, group, remote): one role's tasks never take a place in another
-- role's group. Within a group the rows go in claim order (higher priority, then higher max, then
-- lower id), and a row is taken only while its group runs fewer than max + 1 (max >= 0), or none
-- at all and it is the group's first waiting row, ready or not (max < 0: one at a time, spaced).
-- Among the roles the claim takes turns: each role's first ready task before any role's second,
-- and no role holds more than p_owner_cap tasks at once, so that one role's backlog, however high
-- its priorities, leaves room for the others. The cost grows with the roles that have waiting rows
-- and with p_slots, not with the rows, groups or future plans waiting (see candidates below).
CREATE FUNCTION pgjobs.pgj_task_claim_(p_epoch bigint, p_slots int, p_owner_cap int)
RETURNS TABLE (id bigint, attempt int, owner oid, owner_name text, owner_super boolean, owner_login boolean,
               input text, timeout interval, plan timestamptz, repeat interval, drift boolean, max int,
               retries int, retry_delay interval, save boolean, header boolean, string boolean,
               delimiter text, escape text, quote text, "null" text, remote text, count int, live interval,
               origin timestamptz)
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
        ) c
    ),
    ranked AS (
        SELECT c.id, c.priority, c.max, c.o,
               bool_and(CASE WHEN c.max >= 0 THEN busy.n + c.i <= c.max ELSE busy.n = 0 AND c.i = 0 AND c.id = head.id END)
                   OVER (PARTITION BY c.o, c.g, c.r ORDER BY c.i) AS fits
        FROM (SELECT candidates.*, row_number() OVER (PARTITION BY candidates.o, candidates.g, candidates.r
                                                      ORDER BY candidates.priority DESC, candidates.max DESC, candidates.id) - 1 AS i
              FROM candidates) c,
        LATERAL (SELECT count(*) AS n FROM pgjobs.task b
                 WHERE b.state IN ('TAKE', 'WORK') AND b.owner = c.o AND b."group" = c.g AND coalesce(b.remote, '') = c.r) busy,
        -- The group's first waiting row, ready or not: a negative-max group waits for it, planned
        -- by the end of the task before it, and no other row of the group passes it.
        LATERAL (SELECT t.id FROM pgjobs.task t
                 WHERE t.state = 'PLAN' AND t.owner = c.o AND t."group" = c.g AND coalesce(t.remote, '') = c.r
                 ORDER BY t.priority DESC, t.max DESC, t.id LIMIT 1) head
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
        SELECT turns.id FROM turns JOIN lockable ON lockable.id = turns.id
        WHERE turns.turn <= p_owner_cap - (SELECT count(*) FROM pgjobs.task b WHERE b.state IN ('TAKE', 'WORK') AND b.owner = turns.o)
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
           coalesce(c.origin, c.plan)
    FROM claimed c LEFT JOIN pg_catalog.pg_roles r ON r.oid = c.owner
    ORDER BY c.priority DESC, c.max DESC, c.id;
END
$$;

-- pgj_task_work_ marks claimed tasks as running (WORK), with the backend pid of the session that
-- runs each and its start.
CREATE FUNCTION pgjobs.pgj_task_work_(p_epoch bigint, p_ids bigint[], p_attempts int[], p_pids int[], p_starts timestamptz[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
BEGIN
    PERFORM pgjobs.pgj_task_lead_(p_epoch);
    UPDATE pgjobs.task t SET state = 'WORK', pid = w.pid, start = w.start
    FROM unnest(p_ids, p_attempts, p_pids, p_starts) AS w(id, attempt, pid, start)
    WHERE t.id = w.id AND t.attempt = w.attempt AND t.state = 'TAKE'
      AND t.id IN (SELECT y.id FROM pgjobs.task y WHERE y.id = ANY (p_ids) FOR UPDATE SKIP LOCKED);
END
$$;

-- pgj_task_end_ writes the end of a run: with p_retry_at, the task goes back to PLAN at that time
-- and keeps its error; else it ends DONE (p_error NULL) or FAIL, a repeating task gets its next
-- row (parent = this id, plan p_next_plan), the next waiting task of a negative-max group is
-- planned no earlier than p_space_at, and a row that produced nothing (output and error NULL) is
-- deleted when its delete is on. Returns false when the row is no longer this attempt's, and NULL
-- when another session holds a lock on it (its owner's SELECT ... FOR UPDATE): the agent writes it
-- later, and no lock of one role holds up the results of another.
CREATE FUNCTION pgjobs.pgj_task_end_(p_epoch bigint, p_id bigint, p_attempt int, p_start timestamptz, p_stop timestamptz,
                                     p_output text, p_error text, p_retry_at timestamptz,
                                     p_next_plan timestamptz, p_space_at timestamptz)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
DECLARE
    t pgjobs.task;
    head bigint;
BEGIN
    PERFORM pgjobs.pgj_task_lead_(p_epoch);
    PERFORM FROM pgjobs.task x WHERE x.id = p_id AND x.attempt = p_attempt AND x.state IN ('TAKE', 'WORK') FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        IF EXISTS (SELECT FROM pgjobs.task x WHERE x.id = p_id AND x.attempt = p_attempt AND x.state IN ('TAKE', 'WORK')) THEN
            RETURN NULL;
        END IF;
        RETURN false;
    END IF;
    IF p_retry_at IS NOT NULL THEN
        UPDATE pgjobs.task x SET state = 'PLAN', plan = p_retry_at, start = p_start, stop = p_stop, output = p_output, error = p_error
        WHERE x.id = p_id AND x.attempt = p_attempt AND x.state IN ('TAKE', 'WORK');
        RETURN FOUND;
    END IF;
    UPDATE pgjobs.task x SET state = CASE WHEN p_error IS NULL THEN 'DONE' ELSE 'FAIL' END::pgjobs.task_state,
                             start = p_start, stop = p_stop, output = p_output, error = p_error
    WHERE x.id = p_id AND x.attempt = p_attempt AND x.state IN ('TAKE', 'WORK')
    RETURNING x.* INTO t;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF t.repeat > interval '0' AND p_next_plan IS NOT NULL THEN
        INSERT INTO pgjobs.task (parent, plan, active, live, repeat, timeout, count, max, delete, drift, header, string,
                                 delimiter, escape, quote, "null", save, data, "group", input, remote, owner, priority,
                                 retries, retry_delay, origin)
        VALUES (t.id, p_next_plan, t.active, t.live, t.repeat, t.timeout, t.count, t.max, t.delete, t.drift, t.header, t.string,
                t.delimiter, t.escape, t.quote, t."null", t.save, t.data, t."group", t.input, t.remote, t.owner, t.priority,
                t.retries, t.retry_delay, CASE WHEN t.drift THEN p_next_plan ELSE coalesce(t.origin, t.plan) END);
    END IF;
    IF t.max < 0 AND p_space_at IS NOT NULL THEN
        SELECT n.id INTO head FROM pgjobs.task n
        WHERE n.state = 'PLAN' AND n.owner = t.owner AND n."group" = t."group" AND coalesce(n.remote, '') = coalesce(t.remote, '')
        ORDER BY n.priority DESC, n.max DESC, n.id LIMIT 1;
        UPDATE pgjobs.task x SET plan = p_space_at
        WHERE x.id = (SELECT y.id FROM pgjobs.task y WHERE y.id = head FOR UPDATE SKIP LOCKED) AND x.plan < p_space_at;
    END IF;
    IF t.delete AND t.output IS NULL AND t.error IS NULL THEN
        DELETE FROM pgjobs.task x WHERE x.id = t.id;
    END IF;
    RETURN true;
END
$$;

-- pgj_task_reset_ puts back to PLAN the tasks claimed (TAKE) or running (WORK) that no run of the
-- calling agent holds (p_mine) and whose session has ended: those of an agent that died or lost
-- the lead. They run again, their attempt counting on. Returns how many it reset, and how many such
-- tasks still run on a session of their own (their agent died, the server has not ended it yet):
-- the agent looks again a little later.
CREATE FUNCTION pgjobs.pgj_task_reset_(p_epoch bigint, p_mine bigint[], OUT reset int, OUT running int)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
BEGIN
    PERFORM pgjobs.pgj_task_lead_(p_epoch);
    UPDATE pgjobs.task t SET state = 'PLAN', pid = NULL
    WHERE t.id IN (SELECT y.id FROM pgjobs.task y
                   WHERE y.state IN ('TAKE', 'WORK') AND y.id <> ALL (p_mine)
                     AND (y.state = 'TAKE' OR y.pid IS NULL OR y.remote IS NOT NULL -- its pid is the remote server's
                          OR NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a WHERE a.pid = y.pid))
                   FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS reset = ROW_COUNT;
    SELECT count(*) INTO running FROM pgjobs.task t WHERE t.state IN ('TAKE', 'WORK') AND t.id <> ALL (p_mine);
END
$$;

-- pgj_task_next_ returns when the agent must look again: the next future plan, and the first moment
-- a waiting one-shot task expires (a ready one may wait for a place in its group); NULL when none.
-- Both come from an index.
CREATE FUNCTION pgjobs.pgj_task_next_(OUT plan timestamptz, OUT expiry timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
    SELECT (SELECT min(t.plan) FROM pgjobs.task t WHERE t.state = 'PLAN' AND t.plan > now()),
           (SELECT min(t.expires) FROM pgjobs.task t WHERE t.state = 'PLAN' AND t.expires IS NOT NULL AND isfinite(t.expires))
$$;

-- pgj_task_prune_ deletes at most p_batch of the ended tasks older than the task_retention setting.
CREATE FUNCTION pgjobs.pgj_task_prune_(p_batch int) RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
DECLARE
    n int;
BEGIN
    DELETE FROM pgjobs.task t WHERE t.id IN (
        SELECT o.id FROM pgjobs.task o
        WHERE o.state IN ('DONE', 'FAIL', 'GONE')
          AND o.stop < now() - coalesce((SELECT s.value::interval FROM pgjobs.pgj_setting_ s WHERE s.name = 'task_retention'), interval '7 days')
        ORDER BY o.stop LIMIT p_batch FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

-- pgj_task_begin_ is sent on a task's session as a query of its own before the task's input, which
-- the agent sends only when it succeeded: the session must be of the task's
-- owner (role OID p_owner), which must still exist, log in and be valid. It sets the input's
-- statement_timeout (p_timeout_ms > 0) and the task id the input's own INSERTs take as parent.
CREATE FUNCTION pgjobs.pgj_task_begin_(p_id bigint, p_owner oid, p_timeout_ms bigint) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    SELECT rolname, rolcanlogin, rolvaliduntil INTO r FROM pg_roles WHERE oid = p_owner;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'task %: its owner (role OID %) was dropped: the task does not run', p_id, p_owner
            USING ERRCODE = 'undefined_object';
    ELSIF NOT r.rolcanlogin THEN
        RAISE EXCEPTION 'task %: its owner % may not log in: the task does not run', p_id, r.rolname
            USING ERRCODE = 'insufficient_privilege';
    ELSIF r.rolvaliduntil < now() THEN
        RAISE EXCEPTION 'task %: its owner % expired at %: the task does not run', p_id, r.rolname, r.rolvaliduntil
            USING ERRCODE = 'insufficient_privilege';
    ELSIF session_user <> r.rolname OR current_user <> r.rolname THEN
        RAISE EXCEPTION 'task %: this session runs as role %, not as the task''s owner %: the task does not run', p_id, current_user, r.rolname
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF p_timeout_ms > 0 THEN
        PERFORM set_config('statement_timeout', p_timeout_ms::text, false);
    ELSE
        RESET statement_timeout; -- the role's or the database's, not a kept session's last task's
    END IF;
    PERFORM set_config('pgjobs.task_id', p_id::text, false);
END
$$;

REVOKE ALL ON FUNCTION pgjobs.pgj_task_lead_(bigint), pgjobs.pgj_task_claim_(bigint, int, int),
    pgjobs.pgj_task_work_(bigint, bigint[], int[], int[], timestamptz[]),
    pgjobs.pgj_task_end_(bigint, bigint, int, timestamptz, timestamptz, text, text, timestamptz, timestamptz, timestamptz),
    pgjobs.pgj_task_reset_(bigint, bigint[]), pgjobs.pgj_task_next_(), pgjobs.pgj_task_prune_(int)
FROM PUBLIC;
-- Every role's task session calls it; it only checks and sets its own session.
GRANT EXECUTE ON FUNCTION pgjobs.pgj_task_begin_(bigint, oid, bigint) TO PUBLIC;
