-- Records the installed version ($1) and adds the schema to the database's search_path.
SELECT pgjobs.pgj_install_finish_($1)
