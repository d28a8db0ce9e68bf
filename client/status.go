package client

import (
	"encoding/json"
	"strings"

	"github.com/a2amesh/a2amesh/a2a"
)

// The HTTP+JSON and gRPC bindings answer errors as a google.rpc.Status: a
// status code, a message, and details among which a google.rpc.ErrorInfo
// names the A2A error (spec §5.4, §10.6, §11.6). The client turns them
// back into the *a2a.Error a JSON-RPC server would have answered.

// reasonCodes maps an ErrorInfo reason to its A2A code: the inverse of
// what a2a.Error.Status gives for each code.
var reasonCodes = func() map[string]int {
	m := map[string]int{}
	for _, code := range []int{
		a2a.CodeParseError, a2a.CodeInvalidRequest, a2a.CodeMethodNotFound, a2a.CodeInvalidParams,
		a2a.CodeInternalError, a2a.CodeTaskNotFound, a2a.CodeTaskNotCancelable,
		a2a.CodePushNotificationNotSupported, a2a.CodeUnsupportedOperation,
		a2a.CodeContentTypeNotSupported, a2a.CodeInvalidAgentResponse,
		a2a.CodeExtendedCardNotConfigured, a2a.CodeExtensionSupportRequired,
		a2a.CodeVersionNotSupported, a2a.CodeServerBusy, a2a.CodeRateLimited,
	} {
		if r := (&a2a.Error{Code: code}).Status().Reason; r != "" {
			m[r] = code
		}
	}
	return m
}()

// statusCode is the A2A code of a status error: the one its ErrorInfo
// reason names; else, by its status alone, the few codes a status says
// unambiguously (an unknown method, invalid input, the rate limit); else
// internal error.
func statusCode(reason, grpcCode string) int {
	if code, ok := reasonCodes[strings.ToUpper(reason)]; ok {
		return code
	}
	switch strings.ToUpper(grpcCode) {
	case "UNIMPLEMENTED":
		return a2a.CodeMethodNotFound
	case "INVALID_ARGUMENT":
		return a2a.CodeInvalidParams
	case "RESOURCE_EXHAUSTED":
		return a2a.CodeRateLimited
	}
	return a2a.CodeInternalError
}

// restStatus is the google.rpc.Status JSON of an HTTP+JSON error.
type restStatus struct {
	Error *struct {
		Code    json.RawMessage   `json:"code"`
		Status  string            `json:"status"`
		Message string            `json:"message"`
		Details []json.RawMessage `json:"details"`
	} `json:"error"`
}

// decodeStatusError reads body as {"error": google.rpc.Status}; nil when
// it is not one. The error's data is the status's details, as a JSON-RPC
// 1.0 error carries them.
func decodeStatusError(body []byte) *a2a.Error {
	var st restStatus
	if json.Unmarshal(body, &st) != nil || st.Error == nil || (st.Error.Status == "" && st.Error.Message == "" && len(st.Error.Code) == 0) {
		return nil
	}
	reason := ""
	var data []any
	for _, raw := range st.Error.Details {
		var info a2a.ErrorInfo
		if json.Unmarshal(raw, &info) == nil && reason == "" && isA2AErrorInfo(info.Type, info.Domain) {
			reason = info.Reason
		}
		var d any
		if json.Unmarshal(raw, &d) == nil {
			data = append(data, d)
		}
	}
	e := &a2a.Error{Code: statusCode(reason, st.Error.Status), Message: st.Error.Message}
	if e.Message == "" {
		e.Message = st.Error.Status
		if sentinel := sentinelFor(e.Code); sentinel != nil {
			e.Message = sentinel.Message
		}
	}
	if len(data) > 0 {
		e.Data = data
	}
	return e
}

// isA2AErrorInfo says whether a detail is an ErrorInfo of the A2A domain
// (a missing domain is taken as A2A's).
func isA2AErrorInfo(typ, domain string) bool {
	return strings.HasSuffix(typ, "google.rpc.ErrorInfo") && (domain == "" || domain == a2a.ErrorDomain)
}

// sentinelFor returns the sentinel error of an A2A code, for its standard
// message; nil for a code without one.
func sentinelFor(code int) *a2a.Error {
	for _, e := range []*a2a.Error{
		a2a.ErrParse, a2a.ErrInvalidRequest, a2a.ErrMethodNotFound, a2a.ErrInvalidParams, a2a.ErrInternal,
		a2a.ErrTaskNotFound, a2a.ErrTaskNotCancelable, a2a.ErrPushNotificationNotSupported,
		a2a.ErrUnsupportedOperation, a2a.ErrContentTypeNotSupported, a2a.ErrInvalidAgentResponse,
		a2a.ErrExtendedCardNotConfigured, a2a.ErrExtensionSupportRequired, a2a.ErrVersionNotSupported,
		a2a.ErrServerBusy,
	} {
		if e.Code == code {
			return e
		}
	}
	return nil
}
