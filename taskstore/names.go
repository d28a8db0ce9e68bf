package taskstore

// The task store's streams, bucket and subjects.
//
//	A2A_EVENTS   stream, Limits      a2a.events.<taskId>    each task's event log (seq = SSE id)
//	A2A_TASKS    KV                  <taskId>               task snapshot + owner + last event seq
//	A2A_INDEX    stream, Limits      a2a.index.<owner>.<agent>.<context>.<taskId>  one entry per task, in order of last status change (index.go)
//	A2A_COUNTS   stream, counters    a2a.count.<owner>[.<agent>]  how many tasks an owner has, of each agent (counts.go)
//	A2A_DELEGATIONS stream, Limits   a2a.delegated.<parentTaskId>  one entry per task a task delegated (delegations.go)
//	a2a.settled.<taskId>  core NATS  a task settled: the task as its append left it (await.go)
//	a2a.stalled.<taskId>  core NATS  a worker could not record a task's step: the store is full (await.go; one subscription per process, stalls.go)
const (
	StreamEvents      = "A2A_EVENTS"
	StreamIndex       = "A2A_INDEX"
	StreamCounts      = "A2A_COUNTS"
	StreamDelegations = "A2A_DELEGATIONS"
	BucketTasks       = "A2A_TASKS"

	subjEventsPrefix  = "a2a.events."
	subjIndexPrefix   = "a2a.index."
	subjCountPrefix   = "a2a.count."
	subjStalledPrefix = "a2a.stalled."
	subjSettledPrefix = "a2a.settled."
	subjDelegPrefix   = "a2a.delegated."
)

// settledSubject carries the notice that task taskID settled (notifySettled).
func settledSubject(taskID string) string { return subjSettledPrefix + taskID }

// stalledSubject carries NoticeStoreFull for one task.
func stalledSubject(taskID string) string { return subjStalledPrefix + taskID }

// EventsSubject is the event log of one task.
func EventsSubject(taskID string) string { return subjEventsPrefix + taskID }

// leaseTrim is the trimmer's lease (bus.Bus.HoldLease).
const leaseTrim = "trim"
