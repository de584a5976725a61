-- The IANA zone the active (or last) agent reads schedules in; NULL when unknown. Only the roles
-- that may read pgj_leader_ (superusers, the agents' roles) may run it.
SELECT zone FROM pgjobs.pgj_leader_
