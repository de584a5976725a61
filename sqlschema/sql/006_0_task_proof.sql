-- pgjobs schema version 6: exactly-once effects for tasks. The agent sends a task's input with one
-- more statement at its end, SELECT pgj_task_proof_(...), so that the input's own implicit
-- transaction also records that this attempt ran (a proof). A task whose proof committed is never
-- run again: an agent that lost the run's session, or that takes over from one that died, ends it
-- DONE with an error saying its output was lost (pgj_task_ends_, in part 1). A proof needs the
-- token the agent derived from a key only it knows (task_key), the task's id and attempt and the
-- backend of the run's session, and the row must still be in that attempt: an agent that reset the
-- task meanwhile makes the old run's transaction roll back.
SET LOCAL search_path = pg_catalog, pg_temp;

-- The agent's private tables live in a schema PUBLIC may not use: a role cannot even name them, so
-- it cannot queue a lock on them (CREATE RULE, LOCK, PREPARE take one before they check the
-- privilege) that would hold up the proofs of every role's tasks.
CREATE SCHEMA pgjobs_agent;
REVOKE ALL ON SCHEMA pgjobs_agent FROM PUBLIC;

-- The key of each leadership term: a proof's token is sha256(key || id || attempt || backend pid).
CREATE TABLE pgjobs_agent.task_key (
    epoch bigint PRIMARY KEY,
    key bytea NOT NULL CHECK (length(key) = 32),
    created timestamptz NOT NULL DEFAULT now()
);
-- The attempts whose input committed and whose end is not written yet.
CREATE TABLE pgjobs_agent.task_proof (
    id bigint NOT NULL,
    attempt int NOT NULL,
    PRIMARY KEY (id, attempt)
);
REVOKE ALL ON pgjobs_agent.task_key, pgjobs_agent.task_proof FROM PUBLIC;

-- pgj_task_key_ records the key of the agent's term p_epoch, and forgets the keys of terms more
-- than 30 days old (a task's timeout is at most 24 days: no run of theirs can still prove).
CREATE FUNCTION pgjobs.pgj_task_key_(p_epoch bigint, p_key bytea) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '200ms'
AS $$
BEGIN
    PERFORM pgjobs.pgj_task_lead_(p_epoch);
    INSERT INTO pgjobs_agent.task_key (epoch, key) VALUES (p_epoch, p_key)
    ON CONFLICT (epoch) DO UPDATE SET key = excluded.key, created = now();
    DELETE FROM pgjobs_agent.task_key k WHERE k.created < now() - interval '30 days' AND k.epoch <> p_epoch;
END
$$;

-- pgj_task_proof_ is the last statement of a task's input as the agent sends it: in the input's
-- transaction, it records that attempt p_attempt of task p_id ran, if p_token is the agent's for
-- them and for this backend (a token read elsewhere, in pg_stat_activity or a log, proves nothing
-- on another session), and the row is still in that attempt; else it fails, and the input's work
-- with it. The row stays locked (FOR KEY SHARE) until the transaction ends, so that no agent resets
-- it in between (the reset locks FOR UPDATE), while the write of its start (FOR NO KEY UPDATE) goes
-- on. A transaction that wrote nothing in the database (no transaction id) has nothing to prove:
-- its task may run again.
CREATE FUNCTION pgjobs.pgj_task_proof_(p_epoch bigint, p_id bigint, p_attempt int, p_token text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM FROM pgjobs_agent.task_key k
    WHERE k.epoch = p_epoch
      AND encode(sha256(k.key || int8send(p_id) || int4send(p_attempt) || int4send(pg_backend_pid())), 'hex') = p_token;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'task %: this is not the agent''s proof of attempt % on this session: the input''s work is rolled back', p_id, p_attempt
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF pg_current_xact_id_if_assigned() IS NULL THEN
        RETURN;
    END IF;
    PERFORM FROM pgjobs.task t WHERE t.id = p_id AND t.attempt = p_attempt AND t.state IN ('TAKE', 'WORK') FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'task %: attempt % is no longer running (an agent put the task back meanwhile): the input''s work is rolled back', p_id, p_attempt
            USING ERRCODE = 'PGJ02';
    END IF;
    INSERT INTO pgjobs_agent.task_proof (id, attempt) VALUES (p_id, p_attempt) ON CONFLICT DO NOTHING;
END
$$;

-- pgj_task_work_ as in version 5, but it locks FOR NO KEY UPDATE, which a proof's lock (FOR KEY
-- SHARE) allows: the start of a task that ends within milliseconds is written, not skipped.
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
                     AND NOT EXISTS (SELECT FROM pgjobs_agent.task_proof p WHERE p.id = y.id AND p.attempt = y.attempt)
                   FOR UPDATE SKIP LOCKED);
    GET DIAGNOSTICS reset = ROW_COUNT;
    SELECT count(*) INTO running FROM pgjobs.task t
    WHERE t.state IN ('TAKE', 'WORK') AND t.id <> ALL (p_mine)
      AND NOT EXISTS (SELECT FROM pgjobs_agent.task_proof p WHERE p.id = t.id AND p.attempt = t.attempt);
END
$$;

-- pgj_task_adopt_ returns the tasks claimed or running (not p_mine) whose attempt committed its
-- proof: the agent that ran them died or lost the lead before writing their end (the input's
-- transaction committed, so its session, alive or not, does nothing more of it). The calling agent ends them (pgj_task_ends_), DONE: their work is done once.
CREATE FUNCTION pgjobs.pgj_task_adopt_(p_epoch bigint, p_mine bigint[])
RETURNS TABLE (id bigint, attempt int, owner oid, owner_name text, owner_super boolean, owner_login boolean,
               input text, timeout interval, plan timestamptz, repeat interval, drift boolean, max int,
               retries int, retry_delay interval, save boolean, header boolean, string boolean,
               delimiter text, escape text, quote text, "null" text, remote text, count int, live interval,
               origin timestamptz, expires timestamptz, start timestamptz)
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
           coalesce(c.origin, c.plan), NULL::timestamptz, c.start
    FROM pgjobs.task c LEFT JOIN pg_catalog.pg_roles r ON r.oid = c.owner
    WHERE c.id IN (SELECT y.id FROM pgjobs.task y
                   WHERE y.state IN ('TAKE', 'WORK') AND y.id <> ALL (p_mine)
                     AND EXISTS (SELECT FROM pgjobs_agent.task_proof p WHERE p.id = y.id AND p.attempt = y.attempt)
                   FOR UPDATE SKIP LOCKED)
    ORDER BY c.id;
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
    DELETE FROM pgjobs_agent.task_proof p
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
-- Every role's task runs it; it proves only with the agent's token for the session it runs on.
REVOKE ALL ON FUNCTION pgjobs.pgj_task_proof_(bigint, bigint, int, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgjobs.pgj_task_proof_(bigint, bigint, int, text) TO PUBLIC;
