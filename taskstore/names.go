package taskstore

// The task store's streams and subjects.
//
//	A2A_LOG      stream, Limits      a2a.task.<id as tokens>  each task's log, the only place a task is kept (log.go, ids.go)
//	A2A_ALIASES  stream, Limits      a2a.alias.<id>  where the log of a task whose id the mesh did not mint is (ids.go)
//	A2A_COUNTS   stream, counters    a2a.count.<owner>[.<agent>]  how many tasks an owner has, of each agent (counts.go)
//	A2A_DELEGATIONS stream, Limits   a2a.delegated.<parentTaskId>  one entry per task a task delegated (delegations.go)
//	a2a.settled.<taskId>  core NATS  a task settled: the task as its append left it (await.go)
//	a2a.stalled.<taskId>  core NATS  a worker could not record a task's step: the store is full (await.go; one subscription per process, stalls.go)
//
// A2A_EVENTS, A2A_INDEX and the bucket A2A_TASKS are the layout of
// releases before the log held the owner in its subjects: a store that
// finds them refuses to open until `a2amesh migrate` has moved them
// (migrate.go).
const (
	StreamLog         = "A2A_LOG"
	StreamAliases     = "A2A_ALIASES"
	StreamCounts      = "A2A_COUNTS"
	StreamDelegations = "A2A_DELEGATIONS"

	subjLogPrefix     = "a2a.task."
	subjAliasPrefix   = "a2a.alias."
	subjCountPrefix   = "a2a.count."
	subjStalledPrefix = "a2a.stalled."
	subjSettledPrefix = "a2a.settled."
	subjDelegPrefix   = "a2a.delegated."
)

// The earlier layout's names (migrate.go).
const (
	oldStreamEvents = "A2A_EVENTS"
	oldStreamIndex  = "A2A_INDEX"
	oldBucketTasks  = "A2A_TASKS"
	oldEventsPrefix = "a2a.events."
)

// settledSubject carries the notice that task taskID settled (notifySettled).
func settledSubject(taskID string) string { return subjSettledPrefix + taskID }

// stalledSubject carries NoticeStoreFull for one task.
func stalledSubject(taskID string) string { return subjStalledPrefix + taskID }

// leaseTrim is the trimmer's lease (bus.Bus.HoldLease).
const leaseTrim = "trim"
