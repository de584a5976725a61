-- Whether an agent leads the database: the lease has a leader session.
SELECT pid IS NOT NULL FROM pgjobs.pgj_leader_
