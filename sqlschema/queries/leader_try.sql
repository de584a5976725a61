-- Takes the agent leader lock if it is free (see leader_lock.sql); false when another agent holds it.
SELECT pg_try_advisory_lock(hashtext('pgjobs agent leader')::bigint)
