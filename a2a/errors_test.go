package a2a

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSentinelCodes(t *testing.T) {
	tests := []struct {
		err  *Error
		code int
	}{
		{ErrParse, -32700},
		{ErrInvalidRequest, -32600},
		{ErrMethodNotFound, -32601},
		{ErrInvalidParams, -32602},
		{ErrInternal, -32603},
		{ErrTaskNotFound, -32001},
		{ErrTaskNotCancelable, -32002},
		{ErrPushNotificationNotSupported, -32003},
		{ErrUnsupportedOperation, -32004},
		{ErrContentTypeNotSupported, -32005},
		{ErrInvalidAgentResponse, -32006},
		{ErrExtendedCardNotConfigured, -32007},
		{ErrExtensionSupportRequired, -32008},
		{ErrVersionNotSupported, -32009},
		{ErrServerBusy, -32000},
	}
	seen := map[int]bool{}
	for _, tc := range tests {
		assert.Equal(t, tc.code, tc.err.Code, tc.err.Message)
		assert.NotEmpty(t, tc.err.Message)
		assert.False(t, seen[tc.code], "duplicate code %d", tc.code)
		seen[tc.code] = true
	}
}

func TestErrorMethods(t *testing.T) {
	e := ErrTaskNotFound.With("task %s not found", quote("t-1"))
	assert.Equal(t, CodeTaskNotFound, e.Code)
	assert.Equal(t, `task "t-1" not found`, e.Message)
	assert.Equal(t, `jsonrpc -32001: task "t-1" not found`, e.Error())
	assert.Equal(t, "Task not found", ErrTaskNotFound.Message, "With does not modify the sentinel")

	withData := (&Error{Code: 1, Message: "m", Data: "d"}).With("n")
	assert.Equal(t, "d", withData.Data, "With keeps data")

	assert.ErrorIs(t, e, ErrTaskNotFound, "errors.Is matches by code")
	assert.ErrorIs(t, fmt.Errorf("wrapped: %w", e), ErrTaskNotFound)
	assert.NotErrorIs(t, e, ErrTaskNotCancelable)
	assert.NotErrorIs(t, e, io.EOF)
	assert.NotErrorIs(t, e, (*Error)(nil), "a typed nil target does not panic and does not match")

	b, err := json.Marshal(e)
	require.NoError(t, err)
	assert.JSONEq(t, `{"code":-32001,"message":"task \"t-1\" not found"}`, string(b))
}

func TestAsError(t *testing.T) {
	assert.Nil(t, AsError(nil))

	// *Error passes through, also when wrapped, without the wrapper's text.
	e := ErrTaskNotCancelable.With("task is completed")
	assert.Same(t, e, AsError(e))
	got := AsError(fmt.Errorf("db password hunter2: %w", e))
	assert.Same(t, e, got)
	assert.NotContains(t, got.Message, "hunter2")

	// *FieldError becomes invalid params naming the field.
	fe := AsError(&FieldError{Field: "message.role", Reason: "unknown role"})
	assert.Equal(t, CodeInvalidParams, fe.Code)
	assert.Equal(t, "Invalid parameters: message.role: unknown role", fe.Message)
	fe = AsError(fmt.Errorf("decode: %w", &FieldError{Field: "state", Reason: "bad"}))
	assert.Equal(t, CodeInvalidParams, fe.Code)
	assert.Contains(t, fe.Message, "state: bad")
	assert.NotContains(t, fe.Message, "decode")

	// Anything else is a bare internal error: its text never leaks.
	for _, err := range []error{
		errors.New("open /etc/secret: permission denied"),
		fmt.Errorf("nats: %w", io.ErrUnexpectedEOF),
		json.Unmarshal([]byte(`{"secret":`), new(any)),
		ErrInvalidPart,
	} {
		got := AsError(err)
		assert.Equal(t, CodeInternalError, got.Code)
		assert.Equal(t, "Internal error", got.Message)
		assert.Nil(t, got.Data)
		assert.NotContains(t, got.Error(), err.Error())
	}
}

func TestAsErrorTypedNil(t *testing.T) {
	var e *Error
	var err error = e // the classic typed-nil interface
	require.True(t, err != nil)
	got := AsError(err)
	require.NotNil(t, got, "a non-nil error never maps to a nil *Error")
	assert.Equal(t, CodeInternalError, got.Code)
}

func TestErrorStatus(t *testing.T) {
	for _, tc := range []struct {
		err       *Error
		http      int
		grpc, why string
	}{
		{ErrTaskNotFound, 404, "NOT_FOUND", "TASK_NOT_FOUND"},
		{ErrTaskNotCancelable, 400, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"},
		{ErrPushNotificationNotSupported, 400, "FAILED_PRECONDITION", "PUSH_NOTIFICATION_NOT_SUPPORTED"},
		{ErrContentTypeNotSupported, 400, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED"},
		{ErrInvalidAgentResponse, 500, "INTERNAL", "INVALID_AGENT_RESPONSE"},
		{ErrVersionNotSupported, 400, "FAILED_PRECONDITION", "VERSION_NOT_SUPPORTED"},
		{ErrInvalidParams.With("x"), 400, "INVALID_ARGUMENT", "INVALID_PARAMS"},
		{ErrMethodNotFound, 501, "UNIMPLEMENTED", "METHOD_NOT_FOUND"},
		{ErrServerBusy, 503, "UNAVAILABLE", "SERVER_ERROR"},
		{&Error{Code: CodeRateLimited}, 429, "RESOURCE_EXHAUSTED", ""},
		{ErrInternal, 500, "INTERNAL", "INTERNAL_ERROR"},
		{&Error{Code: -32099}, 500, "INTERNAL", ""},
	} {
		st := tc.err.Status()
		if st.HTTP != tc.http || st.GRPC != tc.grpc || st.Reason != tc.why {
			t.Errorf("%d: got %+v, want %d %s %q", tc.err.Code, st, tc.http, tc.grpc, tc.why)
		}
	}
}
