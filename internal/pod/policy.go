package pod

import "time"

// policy decodes a tool-policy block (pod-wide or a service's): the
// loop's bounds, the approval settings and result-ttl.
func (d *decoder) policy(key string, v any) (PolicySpec, error) {
	var p PolicySpec
	m, err := d.object(key, v)
	if err != nil {
		return p, err
	}
	fields := []struct {
		name string
		dst  **int
	}{
		{"max-rounds", &p.MaxRounds},
		{"timeout-per-tool-ms", &p.TimeoutPerToolMS},
		{"total-timeout-ms", &p.TotalTimeoutMS},
		{"max-tool-result-bytes", &p.MaxToolResultBytes},
		{"max-tool-calls-per-round", &p.MaxToolCallsPerRound},
		{"max-tool-calls-per-turn", &p.MaxToolCallsPerTurn},
		{"max-parallel", &p.MaxParallel},
	}
	known := make([]string, len(fields), len(fields)+1)
	for i, f := range fields {
		known[i] = f.name
	}
	if err := d.unknownKeys(key, m, append(known, "approve-destructive", "approval-timeout", "result-ttl")); err != nil {
		return p, err
	}
	if err := d.approvalPolicy(key, m, &p); err != nil {
		return p, err
	}
	if raw, ok := m["result-ttl"]; ok && raw != nil {
		ms, err := d.resultTTL(key+".result-ttl", raw)
		if err != nil {
			return p, err
		}
		p.ResultTTLMS = &ms
	}
	for _, f := range fields {
		raw, ok := m[f.name]
		if !ok || raw == nil {
			continue
		}
		n, err := d.integer(key+"."+f.name, raw)
		if err != nil {
			return p, err
		}
		if n <= 0 {
			return p, d.errf(key+"."+f.name, "use a positive number or remove the key to take the default", "must be > 0, got %d", n)
		}
		*f.dst = &n
	}
	// A total below the per-tool timeout is valid (the smaller governs);
	// compile warns about the effective policy.
	if p.MaxToolCallsPerTurn != nil && p.MaxToolCallsPerRound != nil && *p.MaxToolCallsPerTurn < *p.MaxToolCallsPerRound {
		return p, d.errf(key+".max-tool-calls-per-turn", "raise max-tool-calls-per-turn or lower max-tool-calls-per-round", "%d is below max-tool-calls-per-round %d", *p.MaxToolCallsPerTurn, *p.MaxToolCallsPerRound)
	}
	return p, nil
}

// maxResultTTL is the longest result-ttl (a kept result's handle).
const maxResultTTL = 7 * 24 * time.Hour

// resultTTL decodes result-ttl: a duration ("30m", "2h") from 1s to 168h,
// in milliseconds.
func (d *decoder) resultTTL(key string, v any) (int, error) {
	const fix = `write a duration such as "30m" or "2h" (at least 1s, at most 168h)`
	s, ok := v.(string)
	if !ok {
		return 0, d.errf(key, fix, "must be a duration string, got %s", typeName(v))
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		return 0, d.errf(key, fix, "%q is not a duration", s)
	}
	if dur < time.Second || dur > maxResultTTL {
		return 0, d.errf(key, fix, "%s is out of range", dur)
	}
	return int(dur.Milliseconds()), nil
}
