// Package adminclient is claw's client of cllama's admin listener: the
// operator's API (approvals, the console's data), authenticated with the
// operator token. cmd/claw finds a running pod's listener (the port the
// host publishes it on) and its token (.claw-auth/operator-token).
package adminclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// MaxResponseBytes bounds what the client reads of one answer.
const MaxResponseBytes = 16 << 20

// Client calls one cllama's admin API.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// New returns a Client of the admin listener at base (http://host:port)
// with the operator token.
func New(base, token string) *Client {
	return &Client{base: strings.TrimRight(base, "/"), token: strings.TrimSpace(token), http: &http.Client{
		// Redirects are not followed: the token is for this listener.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// ReadToken reads the operator token file of a pod.
func ReadToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("reading the operator token: %w (claw up writes it)", err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s is empty; run claw up to write a new one", path)
	}
	return tok, nil
}

// URL is the listener's base URL.
func (c *Client) URL() string { return c.base }

// Token is the operator token (the console's login page takes it).
func (c *Client) Token() string { return c.token }

// Error is an answer other than 2xx.
type Error struct {
	Status  int
	Type    string
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("cllama's admin API answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("cllama's admin API answered %d: %s", e.Status, e.Message)
}

// StatusOf returns the HTTP status of an *Error err wraps, else 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// Do sends method path with body (JSON-encoded when not nil) and decodes
// a 2xx answer into out (when not nil). Other answers are an *Error
// carrying the server's message.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("reaching cllama's admin listener at %s: %w (is the pod up?)", c.base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return err
	}
	if len(data) > MaxResponseBytes {
		return fmt.Errorf("cllama's admin API answered more than %d bytes", MaxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		e := &Error{Status: resp.StatusCode}
		var doc struct {
			Error struct{ Type, Message string } `json:"error"`
		}
		if json.Unmarshal(data, &doc) == nil {
			e.Type, e.Message = doc.Error.Type, doc.Error.Message
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("cllama's admin API answered what is not the expected JSON: %w", err)
	}
	return nil
}
