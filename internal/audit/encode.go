package audit

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/clawdapus/clawgo/internal/jsontop"
)

// appendEvent appends e as json.Marshal encodes it, without reflection:
// every proxied request emits at least two events, and the reflective
// encoder cost more than the rest of writing them. The fuzz test holds it
// to json.Marshal byte for byte; what it does not handle itself (policy
// lists, years json.Marshal refuses) goes to json.Marshal.
func appendEvent(b []byte, e *Event) ([]byte, error) {
	if len(e.PolicyFiltered) > 0 || e.Approval != nil || e.Budget != nil || e.Login != nil || e.TS.Year() < 0 || e.TS.Year() > 9999 {
		m, err := json.Marshal(*e) // a copy: e itself does not escape
		return append(b, m...), err
	}
	b = append(b, `{"ts":"`...)
	b = e.TS.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendString(b, `,"claw_id":`, e.ClawID, true)
	b = appendString(b, `,"type":`, e.Type, false)
	b = appendString(b, `,"request_id":`, e.RequestID, true)
	b = appendString(b, `,"format":`, e.Format, true)
	b = appendString(b, `,"model":`, e.Model, true)
	b = appendString(b, `,"route":`, e.Route, true)
	if e.Stream {
		b = append(b, `,"stream":true`...)
	}
	if e.StatusCode != 0 {
		b = strconv.AppendInt(append(b, `,"status_code":`...), int64(e.StatusCode), 10)
	}
	if e.LatencyMS != nil {
		b = strconv.AppendInt(append(b, `,"latency_ms":`...), *e.LatencyMS, 10)
	}
	b = appendIntPtr(b, `,"tokens_in":`, e.TokensIn)
	b = appendIntPtr(b, `,"tokens_out":`, e.TokensOut)
	if !e.CostUSD.IsZero() {
		b = e.CostUSD.AppendJSON(append(b, `,"cost_usd":`...))
	}
	if e.CostUnknown {
		b = append(b, `,"cost_unknown":true`...)
	}
	if e.ManifestPresent != nil {
		b = strconv.AppendBool(append(b, `,"manifest_present":`...), *e.ManifestPresent)
	}
	b = appendIntPtr(b, `,"tools_count":`, e.ToolsCount)
	if e.Mediated {
		b = append(b, `,"mediated":true`...)
	}
	b = appendString(b, `,"error":`, e.Error, true)
	b = appendString(b, `,"tool":`, e.Tool, true)
	b = appendString(b, `,"service":`, e.Service, true)
	if e.Round != 0 {
		b = strconv.AppendInt(append(b, `,"round":`...), int64(e.Round), 10)
	}
	b = appendString(b, `,"mode":`, e.Mode, true)
	b = appendString(b, `,"status":`, e.Status, true)
	b = appendString(b, `,"feed":`, e.Feed, true)
	b = appendIntPtr(b, `,"bytes":`, e.Bytes)
	if e.Cached {
		b = append(b, `,"cached":true`...)
	}
	if e.Stale {
		b = append(b, `,"stale":true`...)
	}
	b = appendString(b, `,"file":`, e.File, true)
	if e.Offset != nil {
		b = strconv.AppendInt(append(b, `,"offset":`...), *e.Offset, 10)
	}
	b = appendString(b, `,"handle":`, e.Handle, true)
	if e.Length != nil {
		b = strconv.AppendInt(append(b, `,"length":`...), *e.Length, 10)
	}
	b = appendString(b, `,"pattern":`, e.Pattern, true)
	b = appendString(b, `,"fallback_from":`, e.FallbackFrom, true)
	b = appendString(b, `,"fallback_reason":`, e.FallbackReason, true)
	return append(b, '}'), nil
}

func appendIntPtr(b []byte, key string, v *int) []byte {
	if v == nil {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(*v), 10)
}

// appendString appends key and s as a JSON string, as encoding/json
// writes it (HTML characters escaped, invalid UTF-8 replaced); omitEmpty
// leaves an empty s out.
func appendString(b []byte, key, s string, omitEmpty bool) []byte {
	if s == "" && omitEmpty {
		return b
	}
	return jsontop.AppendString(append(b, key...), s)
}
