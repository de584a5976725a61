-- pgjobs schema version 3: the active agent of a database is the holder of a lease in pgj_leader_.
--
-- Version 2 made the agent that held a session advisory lock the active one. Any role may take any
-- advisory lock, and a role's prepared transaction (PREPARE TRANSACTION) keeps one with no session
-- the agent could end, so a role could keep every agent standing by. The lease is a row only the
-- agents' roles may write (UPDATE on pgj_leader_: superusers and roles a DBA granted it to): no
-- other role can take it, lock it or keep it. A leader whose session is alive but that does nothing
-- (stopped, hung, a paused VM) is replaced: a standby asks the leader to answer (NOTIFY
-- pgjobs_ping), and takes the lease, with a new epoch, when no answer comes in time.
SET LOCAL search_path = pg_catalog, pg_temp;

ALTER TABLE pgjobs.pgj_leader_
    ADD COLUMN pid           int,         -- the leader session's backend; NULL when no agent leads
    ADD COLUMN backend_start timestamptz, -- and its start, which tells it from a later session with the same pid
    ADD COLUMN answered      timestamptz; -- when the leader last answered a standby's ping
