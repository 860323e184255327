package apierror

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/clawdapus/clawgo/internal/exchange"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, exchange.Anthropic, 400, TypeInvalidRequest, `model must be "<provider>/<model>"`)
	if rec.Code != 400 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatal(rec.Code, rec.Header())
	}
	want := `{"type":"error","error":{"type":"invalid_request_error","message":"model must be \"<provider>/<model>\""}}`
	if rec.Body.String() != want {
		t.Fatalf("%s\nwant %s", rec.Body, want)
	}
	got := string(Body(exchange.OpenAI, TypeAPI, "x"))
	if got != `{"error":{"message":"x","type":"api_error","param":null,"code":null}}` {
		t.Fatal(got)
	}
}

func TestStreamEvent(t *testing.T) {
	a := StreamEvent(exchange.Anthropic, TypeAPI, "broke")
	o := StreamEvent(exchange.OpenAI, TypeAPI, "broke")
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
