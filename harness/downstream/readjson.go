package downstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/agentonce/agentonce/retryclass"
)

// ReadJSON is the end of a tool that calls an HTTP API: pass it what
// http.Client.Do returned,
//
//	return downstream.ReadJSON(client.Do(req))
//
// and it gives the body of a 2xx answer as the tool's output. A non-2xx
// answer becomes retryclass.ResponseError's error; a body that cannot be
// read or is not JSON after a 2xx is maybe-executed.
func ReadJSON(resp *http.Response, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := retryclass.ResponseError(resp); err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	if err == nil && !json.Valid(body) {
		err = fmt.Errorf("the answer is not JSON (%d bytes)", len(body))
	}
	if err != nil {
		return nil, retryclass.MarkMaybeExecuted(fmt.Errorf("%s %s: %d, but reading the answer failed: %w",
			resp.Request.Method, resp.Request.URL.Redacted(), resp.StatusCode, err))
	}
	return body, nil
}
