package chaos

import (
	"fmt"
	"sort"
	"sync"
)

// Violation kinds: each is a broken promise of the mesh.
const (
	VLost             = "lost"              // an acknowledged task not completed after the settle
	VFailed           = "failed"            // an acknowledged task ended failed, canceled or rejected
	VArtifact         = "wrong artifact"    // not exactly one artifact, or not the expected text
	VDuplicateTask    = "duplicate task"    // one messageId made two tasks (seen with ListTasks)
	VDoubleCompletion = "double completion" // a task's log completes it more than once
	VStreamGap        = "stream gap"        // a stream missed an event of the task's log
	VStreamDup        = "stream duplicate"  // a stream repeated an event id
	VStreamOrder      = "stream order"      // event ids went backwards
	VStream           = "stream malformed"  // no id, snapshot mid-stream, clean end before the final event
	VHung             = "hung send"         // a send past its deadline
	VNoReply          = "no reply"          // the retry budget ran out on transport errors alone
	VBadAnswer        = "bad answer"        // not JSON-RPC, or not the result asked for
	VUnknownAgent     = "unknown agent"     // -32602 unknown agent while its workers run
	VNotFound         = "task not found"    // -32001 for an acknowledged task
	VInternal         = "-32603"            // an internal error answered to a client
	VBadCode          = "other error code"  // any other error code than -32000
	VRoleExit         = "role exit"         // a role process ended on its own
	VCheck            = "check incomplete"  // the final check could not read what it needed
)

// Violation is one broken promise, with what shows it.
type Violation struct {
	Kind   string
	Detail string
}

// violations collects violations from every goroutine: all are counted,
// the first examplesPerKind of each kind are kept.
type violations struct {
	mu       sync.Mutex
	counts   map[string]int
	examples []Violation
	perKind  map[string]int
	max      int
}

const examplesPerKind = 25

func newViolations() *violations {
	return &violations{counts: map[string]int{}, perKind: map[string]int{}, max: examplesPerKind}
}

func (v *violations) add(kind, format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.counts[kind]++
	if v.perKind[kind] < v.max {
		v.perKind[kind]++
		v.examples = append(v.examples, Violation{Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
}

func (v *violations) snapshot() (map[string]int, []Violation) {
	v.mu.Lock()
	defer v.mu.Unlock()
	counts := make(map[string]int, len(v.counts))
	for k, n := range v.counts {
		counts[k] = n
	}
	ex := append([]Violation(nil), v.examples...)
	sort.SliceStable(ex, func(i, j int) bool { return ex[i].Kind < ex[j].Kind })
	return counts, ex
}
