package manifest

// BuiltinProvider is a well-known model provider: its default base URL
// and auth style, used when neither providers.json nor <NAME>_BASE_URL
// names one, and the API formats it speaks, unless providers.json
// declares them. claw derives a pod's provider variables from it
// (<NAME>_API_KEY, <NAME>_BASE_URL) and cllama routes by it: one table
// for both.
type BuiltinProvider struct {
	Name    string
	BaseURL string
	Auth    string
	// Aggregator: the provider's own model ids hold "/" (an "org/model"
	// catalogue), so an unknown "<prefix>/" is part of its model name.
	Aggregator bool
	// Formats are the API formats (ProviderFormats) the provider is known
	// to speak, most native first.
	Formats []string
}

// BuiltinProviders is the table, by name.
var BuiltinProviders = []BuiltinProvider{
	// Anthropic also answers chat completions (its OpenAI SDK
	// compatibility layer).
	{"anthropic", "https://api.anthropic.com/v1", ProviderAuthXAPIKey, false, []string{"anthropic", "openai"}},
	{"cerebras", "https://api.cerebras.ai/v1", ProviderAuthBearer, false, []string{"openai"}},
	{"deepseek", "https://api.deepseek.com/v1", ProviderAuthBearer, false, []string{"openai"}},
	{"fireworks", "https://api.fireworks.ai/inference/v1", ProviderAuthBearer, false, []string{"openai", "responses"}},
	{"gemini", "https://generativelanguage.googleapis.com/v1beta/openai", ProviderAuthBearer, false, []string{"openai"}},
	{"google", "https://generativelanguage.googleapis.com/v1beta/openai", ProviderAuthBearer, false, []string{"openai"}},
	{"groq", "https://api.groq.com/openai/v1", ProviderAuthBearer, false, []string{"openai", "responses"}},
	{"mistral", "https://api.mistral.ai/v1", ProviderAuthBearer, false, []string{"openai"}},
	{"openai", "https://api.openai.com/v1", ProviderAuthBearer, false, []string{"openai", "responses"}},
	{"openrouter", "https://openrouter.ai/api/v1", ProviderAuthBearer, true, []string{"openai", "responses", "anthropic"}},
	{"together", "https://api.together.xyz/v1", ProviderAuthBearer, true, []string{"openai"}},
	{"xai", "https://api.x.ai/v1", ProviderAuthBearer, false, []string{"openai", "responses", "anthropic"}},
}

// Builtin returns the built-in provider of that (lower-case) name.
func Builtin(name string) (BuiltinProvider, bool) {
	for _, p := range BuiltinProviders {
		if p.Name == name {
			return p, true
		}
	}
	return BuiltinProvider{}, false
}
