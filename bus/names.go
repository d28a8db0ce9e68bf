package bus

// The streams, buckets and subjects bus itself uses are named in this
// file, and the few of a feature's that another package must know too.
// A feature's layout is its own package's (the task store's in taskstore,
// push's in push/configs.go and push/log.go).
//
//	A2A_WORK     stream, WorkQueue   a2a.work.<agent>.<taskId>  turns waiting for (or held by) a worker
//	A2A_DEAD     stream, Limits      a2a.dead.<agent>       work items that exhausted MaxDeliver
//	A2A_REGISTRY KV, TTL             <agent>.<instance>     agent cards of live workers
//	A2A_LEASES   KV, TTL             <work>                 which process does that work now (lease.go)
//	a2a.control.<taskId>  core NATS  cancel, to whichever worker holds the task
//	a2a.ratelimit.usage   core NATS  what each edge admitted per principal (gossip.go)
const (
	StreamWork = "A2A_WORK"
	StreamDead = "A2A_DEAD"

	BucketRegistry = "A2A_REGISTRY"

	subjWorkPrefix    = "a2a.work."
	subjDeadPrefix    = "a2a.dead."
	subjControlPrefix = "a2a.control."
)

// Push's names that the task store needs, without importing push: its
// retention purges a task's push configs from BucketPush, and it makes
// the push dispatcher's consumer (ConsumerPushDispatch) on its events
// stream. The rest of push's layout is package push's.
const (
	BucketPush           = "A2A_PUSH"
	ConsumerPushDispatch = "push_dispatch"
)

// WorkSubject is where a turn of task taskID waits for agent's workers.
// One subject per task lets anyone ask whether a task's work is queued.
func WorkSubject(agent, taskID string) string { return subjWorkPrefix + agent + "." + taskID }

// WorkFilter matches all work of agent.
func WorkFilter(agent string) string { return subjWorkPrefix + agent + ".>" }

// DeadSubject receives work items of agent that could not be processed.
func DeadSubject(agent string) string { return subjDeadPrefix + agent }

// ControlSubject carries control messages (cancel) for one task.
func ControlSubject(taskID string) string { return subjControlPrefix + taskID }

// ConsumerName is the durable consumer shared by all workers of agent.
func ConsumerName(agent string) string { return "worker_" + agent }

// ValidToken reports whether s can be used as one subject token (agent
// names, task ids): 1-128 of [A-Za-z0-9_-].
func ValidToken(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
