-- pgjobs status, schema versions 1 and 2: the lease records the agent that led last and since when,
-- but not its session, so whether it still leads cannot be read.
SELECT l.agent, l.since FROM pgjobs.pgj_leader_ l
