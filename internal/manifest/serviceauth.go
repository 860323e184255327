package manifest

import (
	"encoding/json"
	"fmt"
)

// ServiceAuth is <context>/<agent-id>/service-auth/<service>.json: a
// credential projected for this agent's calls to one service. It is written
// 0600 and read only by cllama.
type ServiceAuth struct {
	Service string `json:"service"`
	// AuthType is "bearer".
	AuthType  string `json:"auth_type"`
	Token     string `json:"token,omitempty"`
	Principal string `json:"principal,omitempty"`
}

// ParseServiceAuth decodes service-auth/<service>.json.
func ParseServiceAuth(data []byte, service string) (*ServiceAuth, error) {
	var a ServiceAuth
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("service-auth/%s.json: %w", service, err)
	}
	if a.Service == "" {
		a.Service = service
	}
	if a.Service != service {
		return nil, fmt.Errorf("service-auth/%s.json: service: %q does not match the file name", service, a.Service)
	}
	if a.AuthType != "" && a.AuthType != "bearer" {
		return nil, fmt.Errorf("service-auth/%s.json: auth_type: %q must be \"bearer\"", service, a.AuthType)
	}
	return &a, nil
}

// Bearer returns the token as an Auth, or nil when there is none.
func (a *ServiceAuth) Bearer() *Auth {
	if a == nil || a.Token == "" {
		return nil
	}
	return &Auth{Type: "bearer", Token: a.Token}
}
