package anthropic

import (
	"net/http"

	"github.com/clawdapus/clawgo/internal/wire"
)

// modelInfo is the Models API's ModelInfo. cllama knows no creation date:
// it reports the epoch, which the SDKs parse as any other.
type modelInfo struct {
	Type        string `json:"type"`
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	CreatedAt   string `json:"created_at"`
}

func info(m wire.Model) modelInfo {
	return modelInfo{Type: "model", ID: m.ID, DisplayName: m.ID, CreatedAt: "1970-01-01T00:00:00Z"}
}

// ClaimsModelRequest implements wire.ModelCatalog: the Anthropic SDKs send
// anthropic-version, and their key as x-api-key.
func (Format) ClaimsModelRequest(h http.Header) bool {
	return h.Get("Anthropic-Version") != "" || h.Get("X-Api-Key") != ""
}

// ModelList implements wire.ModelCatalog: one page holding every model.
func (Format) ModelList(models []wire.Model) []byte {
	page := struct {
		Data    []modelInfo `json:"data"`
		HasMore bool        `json:"has_more"`
		FirstID *string     `json:"first_id"`
		LastID  *string     `json:"last_id"`
	}{Data: make([]modelInfo, len(models))}
	for i, m := range models {
		page.Data[i] = info(m)
	}
	if n := len(models); n > 0 {
		page.FirstID, page.LastID = &models[0].ID, &models[n-1].ID
	}
	b, _ := wire.MarshalUnescaped(page) // strings only: cannot fail
	return b
}

// ModelObject implements wire.ModelCatalog.
func (Format) ModelObject(m wire.Model) []byte {
	b, _ := wire.MarshalUnescaped(info(m))
	return b
}

// ForwardedHeaders implements wire.HeaderForwarding: the API version the
// SDK speaks and the beta features it opts into reach the provider.
func (Format) ForwardedHeaders() []string { return []string{"Anthropic-Version", "Anthropic-Beta"} }
