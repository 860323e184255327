package pod

import (
	"strings"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// alerts decodes x-claw.alerts: {webhook: URL, secret: TEXT}. Both are
// required: a receiver tells cllama's events from anyone else's only by
// the signature the secret makes.
func (d *decoder) alerts(key string, v any) (*manifest.Alerts, error) {
	m, err := d.object(key, v)
	if err != nil {
		return nil, err
	}
	if err := d.unknownKeys(key, m, []string{"webhook", "secret"}); err != nil {
		return nil, err
	}
	a := &manifest.Alerts{}
	if a.Webhook, err = d.str(key+".webhook", m["webhook"], true); err != nil {
		return nil, err
	}
	if err := manifest.CheckWebhookURL(key+".webhook", a.Webhook); err != nil {
		return nil, d.errf(key+".webhook", "write the receiver's URL, such as https://hooks.example/claw", "%s", strings.TrimPrefix(err.Error(), key+".webhook: "))
	}
	if a.Secret, err = d.str(key+".secret", m["secret"], true); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Secret) == "" {
		return nil, d.errf(key+".secret", `set a secret the receiver knows, e.g. secret: "${ALERT_SECRET}" with ALERT_SECRET in .env`, "is empty (an unset variable?)")
	}
	return a, nil
}
