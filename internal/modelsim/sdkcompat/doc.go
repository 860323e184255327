// Package sdkcompat holds only tests: it drives internal/modelsim with the
// official OpenAI and Anthropic Go SDKs, streaming and not, to prove its
// responses parse in the clients people use. It lives apart from modelsim so
// that modelsim's fuzz targets do not have to instrument both SDKs.
package sdkcompat
