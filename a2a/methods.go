package a2a

import "strings"

// Version is an A2A protocol version served by the mesh.
type Version string

// Supported protocol versions.
const (
	V03 Version = "0.3"
	V10 Version = "1.0"
)

// Op is an operation of the protocol, independent of its method spelling.
type Op int

// Operations.
const (
	OpUnknown Op = iota
	OpSend
	OpStream
	OpGet
	OpList
	OpCancel
	OpSubscribe
	OpPushSet
	OpPushGet
	OpPushList
	OpPushDelete
	OpExtendedCard
)

// Streaming reports whether op answers with an SSE stream.
func (op Op) Streaming() bool { return op == OpStream || op == OpSubscribe }

type methodInfo struct {
	op      Op
	version Version
}

var methods = map[string]methodInfo{
	"SendMessage":                      {OpSend, V10},
	"SendStreamingMessage":             {OpStream, V10},
	"GetTask":                          {OpGet, V10},
	"ListTasks":                        {OpList, V10},
	"CancelTask":                       {OpCancel, V10},
	"SubscribeToTask":                  {OpSubscribe, V10},
	"CreateTaskPushNotificationConfig": {OpPushSet, V10},
	"GetTaskPushNotificationConfig":    {OpPushGet, V10},
	"ListTaskPushNotificationConfigs":  {OpPushList, V10},
	"DeleteTaskPushNotificationConfig": {OpPushDelete, V10},
	"GetExtendedAgentCard":             {OpExtendedCard, V10},

	"message/send":                        {OpSend, V03},
	"message/stream":                      {OpStream, V03},
	"tasks/get":                           {OpGet, V03},
	"tasks/cancel":                        {OpCancel, V03},
	"tasks/resubscribe":                   {OpSubscribe, V03},
	"tasks/pushNotificationConfig/set":    {OpPushSet, V03},
	"tasks/pushNotificationConfig/get":    {OpPushGet, V03},
	"tasks/pushNotificationConfig/list":   {OpPushList, V03},
	"tasks/pushNotificationConfig/delete": {OpPushDelete, V03},
	"agent/getAuthenticatedExtendedCard":  {OpExtendedCard, V03},
	"tasks/send":                          {OpSend, V03},    // 0.2
	"tasks/sendSubscribe":                 {OpStream, V03},  // 0.2
	"tasks/pushNotification/set":          {OpPushSet, V03}, // 0.2
	"tasks/pushNotification/get":          {OpPushGet, V03}, // 0.2
}

// LookupMethod returns the operation and the protocol version a method name
// belongs to; ok is false for an unknown method.
func LookupMethod(name string) (Op, Version, bool) {
	m, ok := methods[name]
	return m.op, m.version, ok
}

// NegotiateVersion decides which version serves a call, from the method's
// own version and the A2A-Version header. An empty header means 0.3 per the
// spec, but a 1.0 method name is unambiguous and is served as 1.0. A header
// naming a version the mesh does not serve yields ErrVersionNotSupported;
// a header naming the other served version than the method is honoured as
// the method's own version (the method name fixes the wire shapes).
func NegotiateVersion(method Version, header string) (Version, *Error) {
	h := strings.TrimSpace(header)
	if h == "" {
		return method, nil
	}
	// Accept "1", "1.0", "1.0.1", "0.3", "0.3.0"; patch numbers are ignored.
	parts := strings.SplitN(h, ".", 3)
	mm := parts[0]
	if len(parts) > 1 {
		mm += "." + parts[1]
	} else {
		mm += ".0"
	}
	switch Version(mm) {
	case V10, V03:
		return method, nil
	}
	return "", ErrVersionNotSupported.With("A2A version %s is not supported; this server speaks 1.0 and 0.3", quote(h))
}
