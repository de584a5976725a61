-- Serializes upgrades: the second waits for the first and then finds nothing to do.
LOCK TABLE pgjobs.pgj_version_ IN EXCLUSIVE MODE
