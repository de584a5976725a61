-- The prepared transactions (PREPARE TRANSACTION) that hold a lock on a pgjobs table: no session
-- holds them, so no session end releases them. A weak lock blocks the agent only with a strong
-- request queued behind it, which the agent ends (leader_intruders.sql), but it blocks upgrades.
-- A prepared transaction's locks have no pid; its transaction id lock names it.
SELECT DISTINCT p.gid, p.owner::text, c.relname::text
FROM pg_catalog.pg_locks l
JOIN pg_catalog.pg_locks x ON x.virtualtransaction = l.virtualtransaction AND x.locktype = 'transactionid' AND x.pid IS NULL
JOIN pg_catalog.pg_prepared_xacts p ON p.transaction = x.transactionid
JOIN pg_catalog.pg_class c ON c.oid = l.relation
WHERE l.locktype = 'relation' AND l.pid IS NULL
  AND c.relnamespace = 'pgjobs'::regnamespace
  AND p.database = pg_catalog.current_database()
