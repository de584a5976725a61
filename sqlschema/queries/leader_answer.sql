-- The leader of epoch $1 answers the standbys' pings. No row: another agent has taken the lease.
UPDATE pgjobs.pgj_leader_ SET answered = pg_catalog.clock_timestamp() WHERE epoch = $1 RETURNING epoch
