package a2a

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLookupMethod(t *testing.T) {
	tests := []struct {
		name    string
		op      Op
		version Version
	}{
		{"SendMessage", OpSend, V10},
		{"SendStreamingMessage", OpStream, V10},
		{"GetTask", OpGet, V10},
		{"ListTasks", OpList, V10},
		{"CancelTask", OpCancel, V10},
		{"SubscribeToTask", OpSubscribe, V10},
		{"CreateTaskPushNotificationConfig", OpPushSet, V10},
		{"GetTaskPushNotificationConfig", OpPushGet, V10},
		{"ListTaskPushNotificationConfigs", OpPushList, V10},
		{"DeleteTaskPushNotificationConfig", OpPushDelete, V10},
		{"GetExtendedAgentCard", OpExtendedCard, V10},
		{"message/send", OpSend, V03},
		{"message/stream", OpStream, V03},
		{"tasks/get", OpGet, V03},
		{"tasks/cancel", OpCancel, V03},
		{"tasks/resubscribe", OpSubscribe, V03},
		{"tasks/pushNotificationConfig/set", OpPushSet, V03},
		{"tasks/pushNotificationConfig/get", OpPushGet, V03},
		{"tasks/pushNotificationConfig/list", OpPushList, V03},
		{"tasks/pushNotificationConfig/delete", OpPushDelete, V03},
		{"agent/getAuthenticatedExtendedCard", OpExtendedCard, V03},
		{"tasks/send", OpSend, V03},
		{"tasks/sendSubscribe", OpStream, V03},
		{"tasks/pushNotification/set", OpPushSet, V03},
		{"tasks/pushNotification/get", OpPushGet, V03},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op, v, ok := LookupMethod(tc.name)
			require.True(t, ok)
			assert.Equal(t, tc.op, op)
			assert.Equal(t, tc.version, v)
		})
	}
	for _, name := range []string{"", "sendMessage", "SENDMESSAGE", "message/Send", "tasks/list", "tasks/get ", "rpc.discover", "toString", "__proto__"} {
		op, v, ok := LookupMethod(name)
		assert.False(t, ok, name)
		assert.Equal(t, OpUnknown, op, name)
		assert.Equal(t, Version(""), v, name)
	}
}

// Every 1.0 RPC of the proto service has a method entry, and every 1.0
// method entry is an RPC of the service.
func TestLookupMethodCoversProtoService(t *testing.T) {
	svc := protoV10(t).Services().Get(0)
	rpcs := map[string]bool{}
	for i := 0; i < svc.Methods().Len(); i++ {
		name := string(svc.Methods().Get(i).Name())
		rpcs[name] = true
		op, v, ok := LookupMethod(name)
		assert.True(t, ok, "rpc %s has no method entry", name)
		assert.Equal(t, V10, v, name)
		assert.Equal(t, op.Streaming(), svc.Methods().Get(i).IsStreamingServer(), "rpc %s: streaming", name)
	}
	assert.GreaterOrEqual(t, len(rpcs), 11)
	for name, m := range methods {
		if m.version == V10 {
			assert.True(t, rpcs[name], "method %s is not an rpc of %s", name, svc.FullName())
		}
	}
}

func TestOpStreaming(t *testing.T) {
	for op := OpUnknown; op <= OpExtendedCard; op++ {
		assert.Equal(t, op == OpStream || op == OpSubscribe, op.Streaming(), "op %d", op)
	}
}

func TestNegotiateVersion(t *testing.T) {
	tests := []struct {
		method Version
		header string
		want   Version
		fail   bool
	}{
		{V03, "", V03, false},
		{V10, "", V10, false},
		{V10, "   ", V10, false},
		{V10, "1.0", V10, false},
		{V10, "1.0.1", V10, false},
		{V10, "1", V10, false},
		{V10, " 1.0 ", V10, false},
		{V03, "0.3", V03, false},
		{V03, "0.3.0", V03, false},
		{V03, "1.0", V03, false}, // the method name fixes the wire shapes
		{V10, "0.3", V10, false},
		{V10, "2.0", "", true},
		{V10, "2", "", true},
		{V10, "0.2", "", true},
		{V03, "0.4", "", true},
		{V10, "1.1", "", true},
		{V10, "garbage", "", true},
		{V10, "v1.0", "", true},
		{V10, "1.", "", true},
		{V10, ".", "", true},
		{V10, "1.0,0.3", "", true},
	}
	for _, tc := range tests {
		t.Run(string(tc.method)+"/"+tc.header, func(t *testing.T) {
			got, err := NegotiateVersion(tc.method, tc.header)
			if tc.fail {
				require.NotNil(t, err)
				assert.Equal(t, CodeVersionNotSupported, err.Code)
				assert.ErrorIs(t, err, ErrVersionNotSupported)
				assert.Contains(t, err.Message, strings.TrimSpace(tc.header))
				assert.Equal(t, Version(""), got)
				return
			}
			require.Nil(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := NegotiateVersion(V10, strings.Repeat("9", 1000))
	require.NotNil(t, err)
	assert.Less(t, len(err.Message), 200, "a long header is truncated in the message")
}
