-- Waits for and takes the session advisory lock that makes one agent per database the active one.
-- The lock goes with the session: when the agent dies, its session ends and the next agent's wait returns.
SELECT pg_advisory_lock(hashtext('pgjobs agent leader')::bigint)
