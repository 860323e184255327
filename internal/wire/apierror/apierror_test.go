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
	Write(rec, anthropic.New(), 400, TypeInvalidRequest, `model must be "<provider>/<model>"`)
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
	a := StreamEvent(anthropic.New(), TypeAPI, "broke")
	o := StreamEvent(openai.New(), TypeAPI, "broke")
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
