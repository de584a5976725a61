-- Records the schema version ($1) after an upgrade.
UPDATE pgjobs.pgj_version_ SET version = $1, upgraded = now()
