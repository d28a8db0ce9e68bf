package a2a

// Message replies. An agent may answer a send with a Message instead of a
// task (SendMessage's result is a Task or a Message). The mesh records
// every send as a task before any agent runs, so such a reply is recorded
// as the task's final event: a completed status whose message carries
// ReplyKey in its metadata. A task ending so is a message reply: the
// client gets the message (without the task's id), and the task itself is
// hidden from every task method, since the client never learned its id.

// ReplyKey is the metadata key, in the status message of a completed
// task, that marks the message as the agent's reply to the send that
// created the task. It is the mesh's own and never reaches a client.
const ReplyKey = "a2amesh.reply"

// ClaimKey is the metadata key, in the status update a worker starts a run
// with (a working status), that marks the run of a turn that may still be
// answered with a message: the agent has not decided yet. Any later event
// of the turn decides it. Edges strip it; it never reaches a client.
const ClaimKey = "a2amesh.claim"

// IsClaimEvent reports whether ev is a worker's claim of a turn that may
// still be answered with a message (see ClaimKey).
func IsClaimEvent(ev *StreamResponse) bool {
	su := ev.StatusUpdate
	if su == nil || su.Status.State != StateWorking || su.Status.Message != nil {
		return false
	}
	v, ok := su.Metadata[ClaimKey].(bool)
	return ok && v
}

// MessageRepliesExtension is the URI an agent card lists among its
// capabilities' extensions when the agent may answer a send with a
// Message. Edges read it to decide how to answer before the agent has
// run: a stream or a non-blocking send of such an agent waits for the
// agent's first output. It needs no activation by clients.
const MessageRepliesExtension = "https://a2amesh.dev/extensions/message-replies/v1"

// RepliesWithMessage reports whether card declares MessageRepliesExtension.
func (c *AgentCard) RepliesWithMessage() bool {
	for _, e := range c.Capabilities.Extensions {
		if e.URI == MessageRepliesExtension {
			return true
		}
	}
	return false
}

// IsReply reports whether t ended as a message reply.
func (t *Task) IsReply() bool { return isReply(t.Status) }

func isReply(st TaskStatus) bool {
	if st.State != StateCompleted || st.Message == nil {
		return false
	}
	v, ok := st.Message.Metadata[ReplyKey].(bool)
	return ok && v
}

// Reply returns the message t answered its send with, as the client gets
// it: no task id, the task's context id, without ReplyKey. It is nil
// unless t ended as a message reply.
func (t *Task) Reply() *Message {
	if !t.IsReply() {
		return nil
	}
	m := *t.Status.Message
	m.TaskID, m.ContextID, m.Role = "", t.ContextID, RoleAgent
	m.Metadata = nil
	for k, v := range t.Status.Message.Metadata {
		if k == ReplyKey {
			continue
		}
		if m.Metadata == nil {
			m.Metadata = Metadata{}
		}
		m.Metadata[k] = v
	}
	return &m
}

// IsReplyEvent reports whether ev is the event that records a message
// reply (see ReplyKey).
func IsReplyEvent(ev *StreamResponse) bool {
	return ev.StatusUpdate != nil && isReply(ev.StatusUpdate.Status)
}
