-- Drops the agent's private schema (schema version 6 and later).
DROP SCHEMA pgjobs_agent CASCADE;
