package pod

import (
	"errors"
	"strings"
	"testing"
)

func TestAlerts(t *testing.T) {
	c := mustPod(t, "alerts: {webhook: 'https://hooks.example/claw', secret: s3cret}")
	if c.Alerts == nil || c.Alerts.Webhook != "https://hooks.example/claw" || c.Alerts.Secret != "s3cret" {
		t.Fatalf("alerts = %+v", c.Alerts)
	}
	for _, tc := range []struct{ src, key, says string }{
		{`alerts: {webhook: 'ftp://x/y', secret: s}`, "x-claw.alerts.webhook", "http"},
		{`alerts: {webhook: 'https://user:pw@x/y', secret: s}`, "x-claw.alerts.webhook", "user information"},
		{`alerts: {webhook: 'https://x/y'}`, "x-claw.alerts.secret", "required"},
		{`alerts: {webhook: 'https://x/y', secret: '  '}`, "x-claw.alerts.secret", "empty"},
		{`alerts: {webhook: 'https://x/y', secret: s, retries: 3}`, "x-claw.alerts.retries", ""},
		{`alerts: https://x/y`, "x-claw.alerts", ""},
	} {
		_, err := DecodePodClaw("claw-pod.yml", decodeYAML(t, tc.src))
		var e *Error
		if !errors.As(err, &e) || e.Key != tc.key || !strings.Contains(e.Error(), tc.says) {
			t.Errorf("%s: got %v, want key %s saying %q", tc.src, err, tc.key, tc.says)
		}
	}
}
