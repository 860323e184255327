package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// PodFile is the name of the pod-wide settings file in cllama's auth
// directory (beside providers.json). It may hold secrets (the alert
// webhook's signing secret), so it is written 0600 and read by cllama only.
const PodFile = "pod.json"

// PodVersion is the pod.json format written here.
const PodVersion = 1

// Pod is <auth>/pod.json: the settings cllama applies to the whole pod
// rather than to one agent (an agent's own are in its metadata.json and
// tools.json).
type Pod struct {
	Version int `json:"version"`
	// Name is the pod's name, as records and alerts carry it.
	Name string `json:"pod,omitempty"`
	// Alerts is x-claw.alerts: where cllama sends the events an operator
	// must hear about. Nil: no webhook.
	Alerts *Alerts `json:"alerts,omitempty"`
}

// Alerts is the pod's alert webhook.
type Alerts struct {
	// Webhook is the http:// or https:// URL cllama POSTs each event to.
	Webhook string `json:"webhook"`
	// Secret signs each body (X-Claw-Signature: sha256=<hex HMAC>). Never
	// sent, never logged.
	Secret string `json:"secret"`
}

// CheckWebhookURL validates an alert webhook URL: absolute http(s) with a
// host and no user information (a password in the URL would travel in
// every request's logs). where names the key for the error.
func CheckWebhookURL(where, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s: %q is not an http:// or https:// URL with a host", where, raw)
	}
	if u.User != nil {
		return fmt.Errorf("%s: the URL carries user information; authenticate the receiver by the signature (secret) instead", where)
	}
	return nil
}

// ParsePod decodes and validates pod.json. Its errors name the field and
// the fix.
func ParsePod(data []byte) (*Pod, error) {
	var p Pod
	if err := decodeOne(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", PodFile, err)
	}
	if p.Version != PodVersion {
		return nil, fmt.Errorf("%s: version: unsupported value %d (want %d; recompile the pod with this claw)", PodFile, p.Version, PodVersion)
	}
	if a := p.Alerts; a != nil {
		if err := CheckWebhookURL(PodFile+": alerts.webhook", a.Webhook); err != nil {
			return nil, err
		}
		if strings.TrimSpace(a.Secret) == "" {
			return nil, fmt.Errorf("%s: alerts.secret: required (receivers verify X-Claw-Signature with it)", PodFile)
		}
	}
	return &p, nil
}

// ReadPod reads dir/pod.json. A missing file is a pod with no pod-wide
// settings (a pod compiled by an earlier claw, or a hand-made auth dir).
func ReadPod(dir string) (*Pod, error) {
	data, err := os.ReadFile(filepath.Join(dir, PodFile))
	if errors.Is(err, fs.ErrNotExist) {
		return &Pod{Version: PodVersion}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParsePod(data)
}
