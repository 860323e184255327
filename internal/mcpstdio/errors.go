package mcpstdio

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC error codes the wrapper itself returns. Both sit in the range
// JSON-RPC reserves for implementation-defined server errors.
const (
	// CodeUnavailable: the stdio server is down, restarting, or died while
	// handling the call. Retrying after the restart may succeed.
	CodeUnavailable = -32010
	// CodeTimeout: the call exceeded the wrapper's per-call timeout. The
	// value is the CKP Tool timeout code (spec 001).
	CodeTimeout = -32014
)

// Codes the SDK's JSON-RPC layer uses locally when a connection goes away;
// they never come from the child, so they are not passed through.
const (
	codeClientClosing = -32003
	codeServerClosing = -32004
	codeRejected      = -32005
)

func unavailable(format string, args ...any) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeUnavailable, Message: "stdio MCP server unavailable: " + fmt.Sprintf(format, args...)}
}

// mapCallError turns what a forwarded call returned into what the HTTP
// client should see. callCtx is the call's context including the wrapper's
// timeout; parent is the caller's own context. diedBecause reports why the
// child generation that served the call went down, if it did.
func mapCallError(parent, callCtx context.Context, err error, timeout time.Duration, diedBecause func() (string, bool)) error {
	if err == nil {
		return nil
	}
	if parent.Err() != nil {
		// The HTTP client gave up or its session closed: nobody will read
		// a nicer error.
		return parent.Err()
	}
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		switch werr.Code {
		case codeClientClosing, codeServerClosing, codeRejected:
		default:
			// The child's own answer (invalid params, unknown tool...):
			// pass it through unchanged.
			return werr
		}
	}
	if errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return &jsonrpc.Error{Code: CodeTimeout, Message: fmt.Sprintf("stdio MCP server did not answer within %s", timeout)}
	}
	if reason, ok := diedBecause(); ok {
		return unavailable("the child failed during the call (%s); it is being restarted", reason)
	}
	return unavailable("%v", err)
}
