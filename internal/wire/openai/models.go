package openai

import (
	"net/http"

	"github.com/clawdapus/clawgo/internal/wire"
)

type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func object(m wire.Model) modelObject {
	return modelObject{ID: m.ID, Object: "model", OwnedBy: m.Provider}
}

// ClaimsModelRequest implements wire.ModelCatalog: OpenAI clients carry
// nothing of their own; the format answers as the registry's fallback.
func (Format) ClaimsModelRequest(http.Header) bool { return false }

// ModelList implements wire.ModelCatalog: {"object":"list","data":[…]}.
func (Format) ModelList(models []wire.Model) []byte {
	data := make([]modelObject, len(models))
	for i, m := range models {
		data[i] = object(m)
	}
	b, _ := wire.MarshalUnescaped(struct {
		Object string        `json:"object"`
		Data   []modelObject `json:"data"`
	}{"list", data}) // strings and numbers only: cannot fail
	return b
}

// ModelObject implements wire.ModelCatalog.
func (Format) ModelObject(m wire.Model) []byte {
	b, _ := wire.MarshalUnescaped(object(m))
	return b
}
