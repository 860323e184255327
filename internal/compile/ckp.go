package compile

import "github.com/clawdapus/clawgo/internal/pod"

// withToolManifests merges the CKP Tool manifests of svc into sd.
func (b *builder) withToolManifests(svc *pod.Service, sd *ServiceDescriptor) (*ServiceDescriptor, error) {
	return sd, nil
}
