package inbox

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentonce/agentonce/idempotency"
	"github.com/agentonce/agentonce/journal"
)

// EventID takes a delivery's event id from its request and body: the key
// an inbox processes at most once.
type EventID func(r *http.Request, body []byte) (string, error)

// New returns a Middleware that runs the handler at most once per event
// id, which id extracts from each delivery (every one must carry one).
// opts may be nil; its Key is replaced.
func New(store journal.Store, id EventID, opts *idempotency.Options) (*idempotency.Middleware, error) {
	if id == nil {
		return nil, errors.New("inbox.New: nil EventID")
	}
	var o idempotency.Options
	if opts != nil {
		o = *opts
	}
	o.Key = id
	return idempotency.New(store, &o)
}

// HeaderEvent takes the event id from a request header.
func HeaderEvent(name string) EventID {
	return func(r *http.Request, _ []byte) (string, error) {
		v := r.Header.Get(name)
		if v == "" {
			return "", fmt.Errorf("the delivery has no %s header", name)
		}
		return v, nil
	}
}

// GitHubDelivery takes the event id from X-GitHub-Delivery, after checking
// X-Hub-Signature-256 (HMAC-SHA256 of the body) when secret is not empty.
func GitHubDelivery(secret string) EventID {
	return func(r *http.Request, body []byte) (string, error) {
		if secret != "" {
			sig, ok := strings.CutPrefix(r.Header.Get("X-Hub-Signature-256"), "sha256=")
			if !ok || !validMAC(secret, body, sig) {
				return "", fmt.Errorf("%w: X-Hub-Signature-256 does not match the body", idempotency.ErrSignature)
			}
		}
		return HeaderEvent("X-GitHub-Delivery")(r, body)
	}
}

// DefaultStripeTolerance is how old a Stripe-Signature timestamp may be.
const DefaultStripeTolerance = 5 * time.Minute

// StripeEvent takes the event id ("evt_…") from a Stripe webhook after
// checking its Stripe-Signature, no older than tolerance (zero means
// DefaultStripeTolerance).
func StripeEvent(secret string, tolerance time.Duration) EventID {
	if tolerance <= 0 {
		tolerance = DefaultStripeTolerance
	}
	return func(r *http.Request, body []byte) (string, error) {
		var ts string
		var sigs []string
		for part := range strings.SplitSeq(r.Header.Get("Stripe-Signature"), ",") {
			k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
			switch k {
			case "t":
				ts = v
			case "v1":
				sigs = append(sigs, v)
			}
		}
		t, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || len(sigs) == 0 {
			return "", fmt.Errorf("%w: Stripe-Signature has no t= timestamp or no v1= signature", idempotency.ErrSignature)
		}
		if age := time.Since(time.Unix(t, 0)); age > tolerance || age < -tolerance {
			return "", fmt.Errorf("%w: Stripe-Signature's timestamp is %s away, more than %s", idempotency.ErrSignature, age.Round(time.Second), tolerance)
		}
		signed := append([]byte(ts+"."), body...)
		ok := false
		for _, s := range sigs {
			ok = ok || validMAC(secret, signed, s)
		}
		if !ok {
			return "", fmt.Errorf("%w: no v1 signature of Stripe-Signature matches the body", idempotency.ErrSignature)
		}
		var ev struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(body, &ev); err != nil || !strings.HasPrefix(ev.ID, "evt_") {
			return "", fmt.Errorf("the Stripe event has no \"id\" starting with evt_")
		}
		return ev.ID, nil
	}
}

// validMAC reports whether hexSig is the hex HMAC-SHA256 of msg with
// secret.
func validMAC(secret string, msg []byte, hexSig string) bool {
	want, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(msg)
	return hmac.Equal(mac.Sum(nil), want)
}
