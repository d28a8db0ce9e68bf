package a2a

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeResultBothVersions(t *testing.T) {
	cases := []struct {
		name, in string
		check    func(t *testing.T, r *StreamResponse)
	}{
		{"1.0 task", `{"task":{"id":"t","contextId":"c","status":{"state":"TASK_STATE_WORKING"}}}`, func(t *testing.T, r *StreamResponse) {
			require.NotNil(t, r.Task)
			assert.Equal(t, StateWorking, r.Task.Status.State)
		}},
		{"0.3 task", `{"kind":"task","id":"t","contextId":"c","status":{"state":"input-required"}}`, func(t *testing.T, r *StreamResponse) {
			require.NotNil(t, r.Task)
			assert.Equal(t, StateInputRequired, r.Task.Status.State)
		}},
		{"0.3 message", `{"kind":"message","messageId":"m","role":"agent","parts":[{"kind":"text","text":"hi"}]}`, func(t *testing.T, r *StreamResponse) {
			require.NotNil(t, r.Message)
			assert.Equal(t, RoleAgent, r.Message.Role)
			assert.Equal(t, "hi", r.Message.Text())
		}},
		{"0.3 status", `{"kind":"status-update","taskId":"t","contextId":"c","final":true,"status":{"state":"completed"}}`, func(t *testing.T, r *StreamResponse) {
			require.NotNil(t, r.StatusUpdate)
			assert.Equal(t, StateCompleted, r.StatusUpdate.Status.State)
		}},
		{"0.3 artifact", `{"kind":"artifact-update","taskId":"t","contextId":"c","append":true,"artifact":{"artifactId":"a","parts":[{"kind":"data","data":{"x":1}}]}}`, func(t *testing.T, r *StreamResponse) {
			require.NotNil(t, r.ArtifactUpdate)
			assert.True(t, r.ArtifactUpdate.Append)
			assert.Equal(t, "a", r.ArtifactUpdate.Artifact.ArtifactID)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := DecodeResult([]byte(c.in))
			require.NoError(t, err)
			c.check(t, r)
		})
	}
	for _, bad := range []string{`{"kind":"weird"}`, `{}`, `{"task":{"id":"t"},"message":{"messageId":"m"}}`, `[1]`, `nope`} {
		_, err := DecodeResult([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func TestSendRequestToV03(t *testing.T) {
	r := &SendMessageRequest{
		Message: &Message{MessageID: "m", Role: RoleUser, Parts: []Part{TextPart("hi")}},
		Configuration: &SendMessageConfiguration{
			TaskPushNotificationConfig: &TaskPushNotificationConfig{URL: "https://h/cb", Token: "tok"},
		},
	}
	b, err := json.Marshal(r.ToV03())
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	cfg := got["configuration"].(map[string]any)
	assert.Equal(t, true, cfg["blocking"])
	assert.Equal(t, "https://h/cb", cfg["pushNotificationConfig"].(map[string]any)["url"])
	assert.Equal(t, "user", got["message"].(map[string]any)["role"])
}
