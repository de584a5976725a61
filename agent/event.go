package agent

// Event is a change of a database agent's state, told to Options.OnEvent.
type Event int

// The events of a database agent.
const (
	EventActive            Event = iota + 1 // it leads the database: its jobs fire
	EventStandingBy                         // another agent leads the database; this one stands by
	EventTakingOver                         // it takes the lead from another agent
	EventLostLead                           // another agent took the lead from it
	EventReachable                          // the database is reachable again after an outage
	EventIdle                               // no job is planned: it sleeps until a change
	EventIntruder                           // it ended a session of a role that locked the agent's tables
	EventPreparedLock                       // it warned of a prepared transaction locking the agent's tables
	EventRunRefused                         // the server refused a run's session: the run waits and tries again
	EventServicesRestarted                  // a statement of its services waited past lock_timeout: they start again, the lead kept
)

func (e Event) String() string {
	switch e {
	case EventActive:
		return "active"
	case EventStandingBy:
		return "standing by"
	case EventTakingOver:
		return "taking over"
	case EventLostLead:
		return "lost the lead"
	case EventReachable:
		return "reachable again"
	case EventIdle:
		return "idle"
	case EventIntruder:
		return "ended an intruder"
	case EventPreparedLock:
		return "warned of a prepared lock"
	case EventRunRefused:
		return "a run's session refused"
	case EventServicesRestarted:
		return "services restarted"
	}
	return "unknown event"
}

// event records the database agent's new state, and tells Options.OnEvent, if set, that it
// changed.
func (a *dbAgent) event(e Event) {
	switch e {
	case EventActive:
		a.setState(StateActive, "")
	case EventStandingBy:
		a.setState(StateStandingBy, "")
	case EventTakingOver:
		a.setState(StateTakingOver, "")
	}
	if a.opt.OnEvent != nil {
		a.opt.OnEvent(a.db.ID, e)
	}
}
