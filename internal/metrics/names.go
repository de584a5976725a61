// Package metrics counts what the agent does for Prometheus: runs, fires, the databases' states,
// sessions and tasks, with labels kept bounded.
package metrics

// The names of the metrics the agent exports. The dashboard and the alert rules under
// packaging/monitoring use these and only these (checked by their test).
const (
	NameBuildInfo       = "pgjobs_build_info"                                   // gauge 1: version, commit, goversion
	NameReloads         = "pgjobs_config_reloads_total"                         // counter: result ok or error
	NameReloadOK        = "pgjobs_config_last_reload_successful"                // gauge: 1 when the last reload succeeded
	NameReloadTime      = "pgjobs_config_last_reload_success_timestamp_seconds" // gauge: Unix time of the last good load
	NameDatabaseUp      = "pgjobs_database_up"                                  // gauge: 1 while the agent has a session on the database
	NameDatabaseActive  = "pgjobs_database_active"                              // gauge: 1 while this agent leads the database
	NameDatabaseStandby = "pgjobs_database_standby"                             // gauge: 1 while it stands by behind a live leader
	NameDatabaseReady   = "pgjobs_database_ready"                               // gauge: 1 when up and active or standing by (/readyz)
	NameReconnects      = "pgjobs_database_reconnects_total"                    // counter: outages of the database's session
	NameSessionsInUse   = "pgjobs_sessions_in_use"                              // gauge by server: sessions open, reserved or lent
	NameSessionsBudget  = "pgjobs_sessions_budget"                              // gauge by server: the session budget (0: not known yet)
	NameSessionsWaiting = "pgjobs_sessions_waiting"                             // gauge by server: runs and tasks waiting for a session
	NameJobRuns         = "pgjobs_job_runs_total"                               // counter: job_name, status (ok, error, cancelled, abandoned, skipped, missed)
	NameJobStartDelay   = "pgjobs_job_start_delay_seconds"                      // histogram: start after the scheduled minute
	NameJobRunDuration  = "pgjobs_job_run_duration_seconds"                     // histogram: how long runs took
	NameTasks           = "pgjobs_tasks"                                        // gauge: task rows by group and state, read at scrape
	NameTaskOldest      = "pgjobs_task_oldest_waiting_seconds"                  // gauge: age of the oldest task due and not started
	NameTasksEnded      = "pgjobs_tasks_ended_total"                            // counter: state DONE, FAIL or GONE
	NameTaskQueueWait   = "pgjobs_task_queue_wait_seconds"                      // histogram: plan (or insert) to start
	NameTaskRunDuration = "pgjobs_task_run_duration_seconds"                    // histogram: start to stop
	NameTaskRetries     = "pgjobs_task_retries_total"                           // counter: failed attempts planned again
	NameTaskResets      = "pgjobs_task_resets_total"                            // counter: tasks of a dead agent put back to PLAN
	NameScrapeErrors    = "pgjobs_scrape_errors_total"                          // counter: reads at scrape time that failed, by database
)

// Names returns the name of every metric family the agent exports.
func Names() []string {
	return []string{NameBuildInfo, NameReloads, NameReloadOK, NameReloadTime, NameDatabaseUp, NameDatabaseActive,
		NameDatabaseStandby, NameDatabaseReady, NameReconnects, NameSessionsInUse, NameSessionsBudget, NameSessionsWaiting,
		NameJobRuns, NameJobStartDelay, NameJobRunDuration, NameTasks, NameTaskOldest, NameTasksEnded, NameTaskQueueWait,
		NameTaskRunDuration, NameTaskRetries, NameTaskResets, NameScrapeErrors}
}
