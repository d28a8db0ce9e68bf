package a2a

import (
	"encoding/json"
	"testing"
)

func TestReplyOfATask(t *testing.T) {
	msg := &Message{MessageID: "r1", TaskID: "t1", ContextID: "c1", Role: RoleAgent, Parts: []Part{TextPart("hi")},
		Metadata: Metadata{ReplyKey: true, "k": "v"}}
	task := Task{ID: "t1", ContextID: "c1", Status: TaskStatus{State: StateCompleted, Message: msg}}
	// through the log's JSON, as the mesh stores it
	b, err := json.Marshal(task)
	if err != nil {
		t.Fatal(err)
	}
	var stored Task
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	r := stored.Reply()
	if r == nil || r.MessageID != "r1" || r.TaskID != "" || r.ContextID != "c1" || r.Text() != "hi" {
		t.Fatalf("Reply() = %+v", r)
	}
	if _, ok := r.Metadata[ReplyKey]; ok || r.Metadata["k"] != "v" {
		t.Errorf("reply metadata %v: want the agent's, without %s", r.Metadata, ReplyKey)
	}
	if _, ok := stored.Status.Message.Metadata[ReplyKey]; !ok {
		t.Error("Reply changed the task's own message")
	}
	if !IsReplyEvent(&StreamResponse{StatusUpdate: &TaskStatusUpdateEvent{Status: stored.Status}}) {
		t.Error("IsReplyEvent of the reply's status")
	}

	for name, st := range map[string]TaskStatus{
		"no marker": {State: StateCompleted, Message: &Message{MessageID: "m"}},
		"failed":    {State: StateFailed, Message: msg},
		"no status": {State: StateCompleted},
	} {
		tk := Task{Status: st}
		if tk.IsReply() || tk.Reply() != nil {
			t.Errorf("%s: taken for a reply", name)
		}
	}
}

func TestCardRepliesWithMessage(t *testing.T) {
	var c AgentCard
	if c.RepliesWithMessage() {
		t.Fatal("an empty card declares replies")
	}
	c.Capabilities.Extensions = []AgentExtension{{URI: "urn:other"}, {URI: MessageRepliesExtension}}
	if !c.RepliesWithMessage() {
		t.Fatal("the extension is not read")
	}
}
