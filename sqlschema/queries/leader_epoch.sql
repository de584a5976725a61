-- Called by an agent that has just taken the leader lock (agent $1): a new fencing epoch.
UPDATE pgjobs.pgj_leader_ SET epoch = epoch + 1, agent = $1, since = clock_timestamp() RETURNING epoch
