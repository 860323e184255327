package apierror

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/clawdapus/clawgo/internal/wire/anthropic"
	"github.com/clawdapus/clawgo/internal/wire/openai"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	New(400, TypeInvalidRequest, `model must be "<provider>/<model>"`).Write(rec, anthropic.New())
	if rec.Code != 400 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatal(rec.Code, rec.Header())
	}
	want := `{"type":"error","error":{"type":"invalid_request_error","message":"model must be \"<provider>/<model>\""}}`
	if rec.Body.String() != want {
		t.Fatalf("%s\nwant %s", rec.Body, want)
	}
	got := string(openai.New().ErrorBody(TypeAPI, "x"))
	if got != `{"error":{"message":"x","type":"api_error","param":null,"code":null}}` {
		t.Fatal(got)
	}
}

func TestStreamEvent(t *testing.T) {
	a := New(502, TypeAPI, "broke").Event(anthropic.New())
	o := New(502, TypeAPI, "broke").Event(openai.New())
	if a.Name != "error" || o.Name != "" {
		t.Fatal(a.Name, o.Name)
	}
	var v struct {
		Error struct{ Message string }
	}
	if json.Unmarshal(o.Data, &v) != nil || v.Error.Message != "broke" {
		t.Fatalf("%s", o.Data)
	}
}

// A refusal's fields join the error object, before a byte (with its
// Retry-After) and in-band alike; members the format already has are kept.
func TestErrorFieldsAndRetryAfter(t *testing.T) {
	e := &Error{Status: 402, Type: "budget_exceeded", Message: "over", RetryAfter: 30,
		Fields: map[string]any{"scope": "agent", "limit": 5, "message": "not this"}}
	rec := httptest.NewRecorder()
	e.Write(rec, openai.New())
	if rec.Code != 402 || rec.Header().Get("Retry-After") != "30" {
		t.Fatal(rec.Code, rec.Header())
	}
	var v struct {
		Error struct {
			Message, Type, Scope string
			Limit                int
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil || v.Error.Message != "over" || v.Error.Scope != "agent" || v.Error.Limit != 5 {
		t.Fatalf("%s %v", rec.Body, err)
	}
	ev := e.Event(anthropic.New())
	if err := json.Unmarshal(ev.Data, &v); err != nil || ev.Name != "error" || v.Error.Scope != "agent" || v.Error.Type != "budget_exceeded" {
		t.Fatalf("%s %v", ev.Data, err)
	}
}
