-- Whether the leader lease still has epoch $1.
SELECT epoch = $1 FROM pgjobs.pgj_leader_
