-- pgjobs schema version 6: exactly-once effects for tasks. The agent sends a task's input with one
-- more statement at its end, CALL pgj_task_proof_(...), so that the input's own implicit
-- transaction also records that this attempt ran (a proof). A task whose proof committed is never
-- run again: an agent that lost the run's session, or that takes over from one that died, ends it
-- DONE with an error saying its output was lost. A proof needs the token the agent derived from a
-- key only it knows (task_key), the task's id and attempt, and the row must still be in that
-- attempt: an agent that reset the task meanwhile makes the old run's transaction roll back.
SET LOCAL search_path = pg_catalog, pg_temp;

-- The key of each leadership term: a proof's token is sha256(key || id || attempt). Hidden from
-- PUBLIC: only the agent and the functions below read it.
CREATE TABLE pgjobs.task_key (
    epoch bigint PRIMARY KEY,
    key bytea NOT NULL CHECK (length(key) = 32),
    created timestamptz NOT NULL DEFAULT now()
);
-- The attempts whose input committed and whose end is not written yet.
CREATE TABLE pgjobs.task_proof (
    id bigint NOT NULL,
    attempt int NOT NULL,
    PRIMARY KEY (id, attempt)
);
REVOKE ALL ON pgjobs.task_key, pgjobs.task_proof FROM PUBLIC;

-- pgj_task_key_ records the key of the agent's term p_epoch, and forgets the keys of terms more
-- than 30 days old (a task's timeout is at most 24 days: no run of theirs can still prove).
CREATE FUNCTION pgjobs.pgj_task_key_(p_epoch bigint, p_key bytea) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
BEGIN
    PERFORM pgjobs.pgj_task_lead_(p_epoch);
    INSERT INTO pgjobs.task_key (epoch, key) VALUES (p_epoch, p_key)
    ON CONFLICT (epoch) DO UPDATE SET key = excluded.key, created = now();
    DELETE FROM pgjobs.task_key k WHERE k.created < now() - interval '30 days' AND k.epoch <> p_epoch;
END
$$;

-- pgj_task_proof_ is the last statement of a task's input as the agent sends it: in the input's
-- transaction, it records that attempt p_attempt of task p_id ran, if p_token is the agent's for
-- them and the row is still in that attempt; else it fails, and the input's work with it. The row
-- stays locked (FOR KEY SHARE) until the transaction ends, so that no agent resets it in between
-- (the reset locks FOR UPDATE), while the write of its start (FOR NO KEY UPDATE) goes on. A
-- read-only transaction has nothing to prove: its task may run again.
CREATE PROCEDURE pgjobs.pgj_task_proof_(p_epoch bigint, p_id bigint, p_attempt int, p_token text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF current_setting('transaction_read_only')::boolean THEN
        RETURN;
    END IF;
    PERFORM FROM pgjobs.task_key k
    WHERE k.epoch = p_epoch AND encode(sha256(k.key || int8send(p_id) || int4send(p_attempt)), 'hex') = p_token;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'task %: this is not the agent''s proof of attempt %: the input''s work is rolled back', p_id, p_attempt
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM FROM pgjobs.task t WHERE t.id = p_id AND t.attempt = p_attempt AND t.state IN ('TAKE', 'WORK') FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'task %: attempt % is no longer running (an agent put the task back meanwhile): the input''s work is rolled back', p_id, p_attempt
            USING ERRCODE = 'PGJ02';
    END IF;
    INSERT INTO pgjobs.task_proof (id, attempt) VALUES (p_id, p_attempt) ON CONFLICT DO NOTHING;
END
$$;

-- pgj_task_work_ as in version 5, but it locks FOR NO KEY UPDATE, which a proof's lock allows: the
-- start of a task that ends within milliseconds is written, not skipped.
CREATE OR REPLACE FUNCTION pgjobs.pgj_task_work_(p_epoch bigint, p_ids bigint[], p_attempts int[], p_pids int[], p_starts timestamptz[])
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
      AND t.id IN (SELECT y.id FROM pgjobs.task y WHERE y.id = ANY (p_ids) FOR NO KEY UPDATE SKIP LOCKED);
END
$$;

-- pgj_task_reset_ as in version 5, but a task whose attempt committed its proof is not put back:
-- pgj_task_adopt_ hands it to the agent, which ends it.
CREATE OR REPLACE FUNCTION pgjobs.pgj_task_reset_(p_epoch bigint, p_mine bigint[], OUT reset int, OUT running int)
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
                     AND NOT EXISTS (SELECT FROM pgjobs.task_proof p WHERE p.id = y.id AND p.attempt = y.attempt)
                   FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS reset = ROW_COUNT;
    SELECT count(*) INTO running FROM pgjobs.task t
    WHERE t.state IN ('TAKE', 'WORK') AND t.id <> ALL (p_mine)
      AND NOT EXISTS (SELECT FROM pgjobs.task_proof p WHERE p.id = t.id AND p.attempt = t.attempt);
END
$$;

-- pgj_task_adopt_ returns the tasks claimed or running (not p_mine) whose attempt committed its
-- proof, and whose session has ended: the agent that ran them died or lost the lead before writing
-- their end. The calling agent ends them (pgj_task_end_), DONE: their work is done once.
CREATE FUNCTION pgjobs.pgj_task_adopt_(p_epoch bigint, p_mine bigint[])
RETURNS TABLE (id bigint, attempt int, owner oid, owner_name text, owner_super boolean, owner_login boolean,
               input text, timeout interval, plan timestamptz, repeat interval, drift boolean, max int,
               retries int, retry_delay interval, save boolean, header boolean, string boolean,
               delimiter text, escape text, quote text, "null" text, remote text, count int, live interval,
               origin timestamptz, start timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
BEGIN
    PERFORM pgjobs.pgj_task_lead_(p_epoch);
    RETURN QUERY
    SELECT c.id, c.attempt, c.owner::oid, r.rolname::text, coalesce(r.rolsuper, false),
           coalesce(r.rolcanlogin AND (r.rolvaliduntil IS NULL OR r.rolvaliduntil > now()), false),
           c.input, c.timeout, c.plan, c.repeat, c.drift, c.max, c.retries, c.retry_delay, c.save,
           c.header, c.string, c.delimiter::text, c.escape::text, c.quote::text, c."null", c.remote, c.count, c.live,
           coalesce(c.origin, c.plan), c.start
    FROM pgjobs.task c LEFT JOIN pg_catalog.pg_roles r ON r.oid = c.owner
    WHERE c.id IN (SELECT y.id FROM pgjobs.task y
                   WHERE y.state IN ('TAKE', 'WORK') AND y.id <> ALL (p_mine)
                     AND EXISTS (SELECT FROM pgjobs.task_proof p WHERE p.id = y.id AND p.attempt = y.attempt)
                     AND (y.pid IS NULL OR NOT EXISTS (SELECT FROM pg_catalog.pg_stat_activity a WHERE a.pid = y.pid))
                   FOR UPDATE SKIP LOCKED)
    ORDER BY c.id;
END
$$;

-- pgj_task_end_ as in version 5, but an attempt whose proof committed ends DONE whatever the agent
-- saw: an error then means the agent lost the session after the commit (the task's backend ended,
-- the server restarted, or the agent took over from one that died), and the error says the output
-- was lost. Its proof is forgotten with the end.
CREATE OR REPLACE FUNCTION pgjobs.pgj_task_end_(p_epoch bigint, p_id bigint, p_attempt int, p_start timestamptz, p_stop timestamptz,
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
    DELETE FROM pgjobs.task_proof p WHERE p.id = p_id;
    IF FOUND AND p_error IS NOT NULL THEN
        p_error := 'the task''s transaction committed, but its output was lost: ' || p_error;
        p_retry_at := NULL;
        UPDATE pgjobs.task x SET state = 'DONE', start = p_start, stop = p_stop, output = p_output, error = p_error
        WHERE x.id = p_id AND x.attempt = p_attempt AND x.state IN ('TAKE', 'WORK')
        RETURNING x.* INTO t;
    ELSIF p_retry_at IS NOT NULL THEN
        UPDATE pgjobs.task x SET state = 'PLAN', plan = p_retry_at, start = p_start, stop = p_stop, output = p_output, error = p_error
        WHERE x.id = p_id AND x.attempt = p_attempt AND x.state IN ('TAKE', 'WORK');
        RETURN FOUND;
    ELSE
        UPDATE pgjobs.task x SET state = CASE WHEN p_error IS NULL THEN 'DONE' ELSE 'FAIL' END::pgjobs.task_state,
                                 start = p_start, stop = p_stop, output = p_output, error = p_error
        WHERE x.id = p_id AND x.attempt = p_attempt AND x.state IN ('TAKE', 'WORK')
        RETURNING x.* INTO t;
    END IF;
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

-- pgj_task_prune_ as in version 5, and it forgets the proofs of attempts no longer running (their
-- end was written, or the row is gone).
CREATE OR REPLACE FUNCTION pgjobs.pgj_task_prune_(p_batch int) RETURNS int
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
DECLARE
    n int;
BEGIN
    DELETE FROM pgjobs.task_proof p
    WHERE NOT EXISTS (SELECT FROM pgjobs.task t WHERE t.id = p.id AND t.attempt = p.attempt AND t.state IN ('TAKE', 'WORK'));
    DELETE FROM pgjobs.task t WHERE t.id IN (
        SELECT o.id FROM pgjobs.task o
        WHERE o.state IN ('DONE', 'FAIL', 'GONE')
          AND o.stop < now() - coalesce((SELECT s.value::interval FROM pgjobs.pgj_setting_ s WHERE s.name = 'task_retention'), interval '7 days')
        ORDER BY o.stop LIMIT p_batch FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$;

REVOKE ALL ON FUNCTION pgjobs.pgj_task_key_(bigint, bytea), pgjobs.pgj_task_adopt_(bigint, bigint[]) FROM PUBLIC;
-- Every role's task runs it; it proves only with the agent's token.
REVOKE ALL ON PROCEDURE pgjobs.pgj_task_proof_(bigint, bigint, int, text) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE pgjobs.pgj_task_proof_(bigint, bigint, int, text) TO PUBLIC;
