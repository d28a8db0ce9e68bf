package a2a

import (
	"errors"
	"fmt"
)

// JSON-RPC 2.0 and A2A error codes (1.0 §5.4, §9.5; the same numbers in 0.3).
const (
	CodeParseError                   = -32700
	CodeInvalidRequest               = -32600
	CodeMethodNotFound               = -32601
	CodeInvalidParams                = -32602
	CodeInternalError                = -32603
	CodeTaskNotFound                 = -32001
	CodeTaskNotCancelable            = -32002
	CodePushNotificationNotSupported = -32003
	CodeUnsupportedOperation         = -32004
	CodeContentTypeNotSupported      = -32005
	CodeInvalidAgentResponse         = -32006
	CodeExtendedCardNotConfigured    = -32007
	CodeExtensionSupportRequired     = -32008
	CodeVersionNotSupported          = -32009
	// CodeServerBusy is an implementation-defined server error (JSON-RPC
	// reserves -32000..-32099): the mesh is at capacity, retry later.
	CodeServerBusy = -32000
	// CodeRateLimited is the mesh's answer to a caller over its rate
	// limit (HTTP 429), distinct from -32000 so a client can tell "slow
	// down" apart from "retry".
	CodeRateLimited = -32029
	// CodePermissionDenied answers a call the access policy does not
	// allow its caller (HTTP 403, gRPC PERMISSION_DENIED). A2A leaves the
	// JSON-RPC code to the implementation; this is the one the A2A Go SDK
	// reads as its ErrUnauthorized.
	CodePermissionDenied = -31403
)

// Error is a JSON-RPC error object. Its Message is always safe to show a
// remote caller; internal causes never reach it.
type Error struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc %d: %s", e.Code, e.Message) }

// Is matches errors by code, so errors.Is(err, ErrTaskNotFound) holds for
// any task-not-found error whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t != nil && t.Code == e.Code
}

// With returns a copy of e with a more specific message.
func (e *Error) With(format string, args ...any) *Error {
	return &Error{Code: e.Code, Message: fmt.Sprintf(format, args...), Data: e.Data}
}

// Sentinel errors, one per code. Compare with errors.Is.
var (
	ErrParse                        = &Error{Code: CodeParseError, Message: "Invalid JSON payload"}
	ErrInvalidRequest               = &Error{Code: CodeInvalidRequest, Message: "Request payload validation error"}
	ErrMethodNotFound               = &Error{Code: CodeMethodNotFound, Message: "Method not found"}
	ErrInvalidParams                = &Error{Code: CodeInvalidParams, Message: "Invalid parameters"}
	ErrInternal                     = &Error{Code: CodeInternalError, Message: "Internal error"}
	ErrTaskNotFound                 = &Error{Code: CodeTaskNotFound, Message: "Task not found"}
	ErrTaskNotCancelable            = &Error{Code: CodeTaskNotCancelable, Message: "Task cannot be canceled"}
	ErrPushNotificationNotSupported = &Error{Code: CodePushNotificationNotSupported, Message: "Push Notification is not supported"}
	ErrUnsupportedOperation         = &Error{Code: CodeUnsupportedOperation, Message: "This operation is not supported"}
	ErrContentTypeNotSupported      = &Error{Code: CodeContentTypeNotSupported, Message: "Incompatible content types"}
	ErrInvalidAgentResponse         = &Error{Code: CodeInvalidAgentResponse, Message: "Invalid agent response"}
	ErrExtendedCardNotConfigured    = &Error{Code: CodeExtendedCardNotConfigured, Message: "Extended agent card is not configured"}
	ErrExtensionSupportRequired     = &Error{Code: CodeExtensionSupportRequired, Message: "Extension support required"}
	ErrVersionNotSupported          = &Error{Code: CodeVersionNotSupported, Message: "A2A version not supported"}
	ErrServerBusy                   = &Error{Code: CodeServerBusy, Message: "Server busy, retry later"}
	ErrPermissionDenied             = &Error{Code: CodePermissionDenied, Message: "Permission denied"}
)

// AsError maps any error to the JSON-RPC error a remote caller may see.
// A *Error passes through; a *FieldError becomes invalid params naming the
// field; anything else becomes a bare internal error, so internal text
// never leaks. This is the one place errors become codes.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		if e == nil { // a typed nil *Error returned as error
			return ErrInternal
		}
		return e
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return ErrInvalidParams.With("Invalid parameters: %s", fe.Error())
	}
	return ErrInternal
}

// Error details of 1.0 (§9.5): error.data is an array of ProtoJSON Any
// objects; A2A errors carry a google.rpc.ErrorInfo naming their reason.
const (
	ErrorInfoType = "type.googleapis.com/google.rpc.ErrorInfo"
	ErrorDomain   = "a2a-protocol.org"
)

// ErrorInfo is a google.rpc.ErrorInfo in ProtoJSON Any form.
type ErrorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

var errorReasons = map[int]string{
	CodeParseError:                   "PARSE_ERROR",
	CodeInvalidRequest:               "INVALID_REQUEST",
	CodeMethodNotFound:               "METHOD_NOT_FOUND",
	CodeInvalidParams:                "INVALID_PARAMS",
	CodeInternalError:                "INTERNAL_ERROR",
	CodeServerBusy:                   "SERVER_ERROR",
	CodeTaskNotFound:                 "TASK_NOT_FOUND",
	CodeTaskNotCancelable:            "TASK_NOT_CANCELABLE",
	CodePushNotificationNotSupported: "PUSH_NOTIFICATION_NOT_SUPPORTED",
	CodeUnsupportedOperation:         "UNSUPPORTED_OPERATION",
	CodeContentTypeNotSupported:      "CONTENT_TYPE_NOT_SUPPORTED",
	CodeInvalidAgentResponse:         "INVALID_AGENT_RESPONSE",
	CodeExtendedCardNotConfigured:    "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
	CodeExtensionSupportRequired:     "EXTENSION_SUPPORT_REQUIRED",
	CodeVersionNotSupported:          "VERSION_NOT_SUPPORTED",
}

// WithErrorInfo returns a copy of e whose data is the 1.0 details array
// holding a google.rpc.ErrorInfo for its code. An error that already has
// data, or whose code has no A2A reason, is returned as is. 0.3 clients
// read data as an object, so this is for 1.0 answers only.
func (e *Error) WithErrorInfo() *Error {
	reason, ok := errorReasons[e.Code]
	if !ok || e.Data != nil {
		return e
	}
	return &Error{Code: e.Code, Message: e.Message,
		Data: []ErrorInfo{{Type: ErrorInfoType, Reason: reason, Domain: ErrorDomain}}}
}

// Status is how an error is answered by the bindings that are not
// JSON-RPC (spec §5.4): the HTTP status of HTTP+JSON, the gRPC status
// code's name (as google.rpc.Status JSON spells it, "NOT_FOUND"), and the
// google.rpc.ErrorInfo reason ("" for none).
type Status struct {
	HTTP   int
	GRPC   string
	Reason string
}

// Status is e's answer in the HTTP+JSON and gRPC bindings. The A2A errors
// follow the spec's table; of the others, invalid input is 400
// INVALID_ARGUMENT, an unknown method 501 UNIMPLEMENTED, -32000 (the mesh
// is briefly unavailable: a failover, a full store, an edge starting) 503
// UNAVAILABLE, the rate limit's -32029 429 RESOURCE_EXHAUSTED, a denial
// by the access policy (-31403) 403 PERMISSION_DENIED, and anything else
// 500 INTERNAL.
func (e *Error) Status() Status {
	st := Status{HTTP: 500, GRPC: "INTERNAL"}
	switch e.Code {
	case CodeParseError, CodeInvalidRequest, CodeInvalidParams, CodeContentTypeNotSupported:
		st = Status{HTTP: 400, GRPC: "INVALID_ARGUMENT"}
	case CodeMethodNotFound:
		st = Status{HTTP: 501, GRPC: "UNIMPLEMENTED"}
	case CodeTaskNotFound:
		st = Status{HTTP: 404, GRPC: "NOT_FOUND"}
	case CodeTaskNotCancelable, CodePushNotificationNotSupported, CodeUnsupportedOperation,
		CodeExtendedCardNotConfigured, CodeExtensionSupportRequired, CodeVersionNotSupported:
		st = Status{HTTP: 400, GRPC: "FAILED_PRECONDITION"}
	case CodeServerBusy:
		st = Status{HTTP: 503, GRPC: "UNAVAILABLE"}
	case CodeRateLimited:
		st = Status{HTTP: 429, GRPC: "RESOURCE_EXHAUSTED"}
	case CodePermissionDenied:
		st = Status{HTTP: 403, GRPC: "PERMISSION_DENIED"}
	}
	st.Reason = errorReasons[e.Code]
	return st
}
