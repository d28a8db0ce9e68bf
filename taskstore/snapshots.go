package taskstore

import (
	"bytes"

	"github.com/a2amesh/a2amesh/a2a"
)

var statePrefix = []byte(`"status":{"state":"`)

// peekState reads the task state from a stored TaskRecord without decoding
// it. The record's fields are written in a fixed order (task id, context
// id, then status), and a quote inside a JSON string is always escaped, so
// the first unescaped occurrence of the prefix is the task's own status.
func peekState(data []byte) (a2a.TaskState, bool) {
	i := bytes.Index(data, statePrefix)
	if i < 0 {
		return "", false
	}
	rest := data[i+len(statePrefix):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return "", false
	}
	return a2a.TaskState(rest[:j]), true
}
