-- Gives the database back its search_path setting, then drops the pgjobs schema.
SELECT pgjobs.pgj_uninstall_prepare_();
DROP SCHEMA pgjobs CASCADE;
