package toolexec

import (
	"encoding/json"
	"testing"
)

// Another spelling of claw_id in the model's arguments never reaches the
// service: a service that binds parameters ignoring case or separators
// would take it for the caller's identity.
func TestClawIDSpellingsNeverReachTheService(t *testing.T) {
	e := New(Options{})
	defer e.Close()
	args := `{"CLAW_ID":"evil-1","Claw_Id":"evil-2","clawId":"evil-3","claw-id":"evil-4","CLAWID":"evil-5","claw.id":"evil-6","symbol":"X"}`
	spellings := []string{"CLAW_ID", "Claw_Id", "clawId", "claw-id", "CLAWID", "claw.id"}
	t.Run("query", func(t *testing.T) {
		svc := newService(t, jsonReply(`{}`))
		wantOK(t, run(t, e, httpTool(svc.URL, "GET", "/q", ""), args))
		q := svc.only(t).Query
		for _, k := range spellings {
			if q.Has(k) {
				t.Errorf("query carries %s=%q", k, q.Get(k))
			}
		}
		if q.Get("symbol") != "X" || q.Has("claw_id") {
			t.Errorf("query = %v", q)
		}
	})
	t.Run("body", func(t *testing.T) {
		svc := newService(t, jsonReply(`{}`))
		schema := `{"type":"object","properties":{"claw_id":{"type":"string"},"symbol":{"type":"string"}}}`
		wantOK(t, run(t, e, httpTool(svc.URL, "POST", "/orders", schema), args))
		var body map[string]any
		if err := json.Unmarshal(svc.only(t).Body, &body); err != nil {
			t.Fatal(err)
		}
		if len(body) != 2 || body["claw_id"] != "analyst-0" || body["symbol"] != "X" {
			t.Errorf("body = %v", body)
		}
	})
	t.Run("path placeholder in another spelling", func(t *testing.T) {
		svc := newService(t, jsonReply(`{}`))
		wantOK(t, run(t, e, httpTool(svc.URL, "GET", "/ctx/{CLAW_ID}", ""), args))
		if got := svc.only(t).RequestURI; got != "/ctx/analyst-0?symbol=X" {
			t.Errorf("request URI = %q", got)
		}
	})
}

func TestSpellsClawID(t *testing.T) {
	for name, want := range map[string]bool{
		"claw_id": true, "CLAW_ID": true, "ClawId": true, "claw-id": true, "clawid": true, "claw id": true, "_claw__id_": true,
		"claw": false, "claw_ids": false, "my_claw_id": false, "id": false, "": false,
		// encoding/json folds ı (dotless i) to I: a Go service binds claw_ıd
		// to its claw_id field, and a later key wins.
		"clawıd": true, "claw_ıd": true, "\u017fclaw_id": false,
	} {
		if got := SpellsClawID(name); got != want {
			t.Errorf("SpellsClawID(%q) = %v, want %v", name, got, want)
		}
	}
}
