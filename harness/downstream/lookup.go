package downstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/google/uuid"
)

// MaxLookupBytes bounds the answer a lookup's Reconcile hook reads.
const MaxLookupBytes = 1 << 20

// LookupReconcile returns a Reconcile hook that GETs the URL url builds
// from the key and input with client (nil means http.DefaultClient): a 2xx
// JSON answer is Happened, a 404 DidNotHappen, anything else CannotTell.
func LookupReconcile(client *http.Client, url func(key uuid.UUID, input json.RawMessage) string) func(ctx context.Context, key uuid.UUID, input json.RawMessage) Reconciliation {
	return func(ctx context.Context, key uuid.UUID, input json.RawMessage) Reconciliation {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url(key, input), nil)
		if err != nil {
			return CannotTell(err)
		}
		return lookup(client, req, func(resp *http.Response) (bool, error) {
			if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusNotFound {
				return resp.StatusCode != http.StatusNotFound, nil
			}
			return false, fmt.Errorf("answered %s", resp.Status)
		})
	}
}

// ServerReconcile returns a Reconcile hook that asks an agentonce server's
// idempotency.Middleware.Lookup at lookupURL what became of the method
// request to path with the key: a stored 2xx answer is Happened,
// "not-run" DidNotHappen, anything else CannotTell.
func ServerReconcile(client *http.Client, lookupURL, method, path string) func(ctx context.Context, key uuid.UUID, input json.RawMessage) Reconciliation {
	u, err := url.Parse(lookupURL)
	if err == nil {
		q := u.Query()
		q.Set("method", method)
		q.Set("path", path)
		u.RawQuery = q.Encode()
	}
	return func(ctx context.Context, key uuid.UUID, _ json.RawMessage) Reconciliation {
		if err != nil {
			return CannotTell(fmt.Errorf("lookup URL: %w", err))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return CannotTell(err)
		}
		req.Header.Set(DefaultUnkeyedKeyHeader, key.String())
		return lookup(client, req, func(resp *http.Response) (bool, error) {
			switch v := resp.Header.Get("Agentonce-Lookup"); {
			case v == "not-run":
				return false, nil
			case v == "succeeded" && resp.StatusCode/100 == 2:
				return true, nil
			case v == "":
				return false, fmt.Errorf("answered %s without Agentonce-Lookup: not an agentonce server's lookup", resp.Status)
			}
			return false, fmt.Errorf("the server's record is %s (%s)", resp.Header.Get("Agentonce-Lookup"), resp.Status)
		})
	}
}

// lookup sends req; found says whether the answer means the effect
// happened (its body the output), did not, or neither (an error).
func lookup(client *http.Client, req *http.Request, found func(*http.Response) (bool, error)) Reconciliation {
	if client == nil {
		client = http.DefaultClient
	}
	fail := func(err error) Reconciliation {
		return CannotTell(fmt.Errorf("lookup %s: %w", req.URL.Redacted(), err))
	}
	resp, err := client.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	ok, err := found(resp)
	if err != nil {
		return fail(err)
	}
	if !ok {
		return DidNotHappen()
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxLookupBytes+1))
	switch {
	case err != nil:
		return fail(fmt.Errorf("reading the answer: %w", err))
	case len(body) > MaxLookupBytes:
		return fail(fmt.Errorf("the answer is over %d bytes", MaxLookupBytes))
	case !json.Valid(body):
		return fail(errors.New("the answer is not JSON"))
	}
	return Happened(body)
}
