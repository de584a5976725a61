-- The uninstall's lock waits are bounded: a session or a prepared transaction of any role holding
-- a lock on pgjobs' objects would make it wait for ever, and its queued lock would hold every
-- statement of the agent behind it, even after the pgjobs that sent it was interrupted.
SET LOCAL lock_timeout = '10s'
