// Package stripetest is a local, stateful fake of Stripe's PaymentIntents
// API on loopback, for testing a charge tool with the real stripe-go
// client: it creates, retrieves, lists and searches PaymentIntents, honours
// Idempotency-Key as Stripe does, and can lose an answer after the charge
// was made, fail before making it, or let its search index lag.
//
//	s := stripetest.NewServer()
//	defer s.Close()
//	sc := s.Client() // a *stripe.Client whose requests go to s
//
// It serves what stripe-go sends for POST /v1/payment_intents (amount,
// currency, metadata, payment_method, confirm), GET
// /v1/payment_intents/{id}, GET /v1/payment_intents (created[gte|gt|lte|lt],
// limit, starting_after; newest first) and GET /v1/payment_intents/search
// with a query of the one form metadata['NAME']:'VALUE'. A confirmed
// PaymentIntent succeeds, unless its payment method is DeclinedCard.
// Anything else is a 400 or a 404 in Stripe's error shape.
package stripetest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	stripego "github.com/stripe/stripe-go/v82"
)

// DeclinedCard is the payment method whose charges are declined, as Stripe's
// test card of that name is.
const DeclinedCard = "pm_card_chargeDeclined"

// maxBody bounds a request body.
const maxBody = 64 << 10

// Server is the fake. Set its fields before the requests they should
// affect; it is safe for concurrent use, and serves one request at a time.
type Server struct {
	*httptest.Server

	// LoseAnswer, when set, is asked for every create: key is the ordinal
	// of its Idempotency-Key (1 for the first key the server saw, 2 for the
	// next; a request without one counts as a new key), try the how-many-th
	// create with that key it is. True makes the server do the work, then
	// close the connection without answering: a lost answer.
	LoseAnswer func(key, try int) bool
	// Unavailable, when set, is asked the same way; true makes the server
	// answer 503 without doing anything and without keeping an answer
	// under the key, as Stripe's edge can when the request never reached
	// the API.
	Unavailable func(key, try int) bool
	// ForgetKeys makes the server keep no Idempotency-Key, as Stripe does
	// for a key older than 24 hours: every create makes a PaymentIntent,
	// net/http's resend of a create on a reused connection that died (it
	// resends a request that carries Idempotency-Key) included.
	ForgetKeys bool
	// Now is the server's clock, which sets a PaymentIntent's created; nil
	// means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	pis     []*stripego.PaymentIntent // in creation order
	byID    map[string]*stripego.PaymentIntent
	indexed map[string]bool // the search index: the ids it shows
	lagging bool
	keys    map[string]*keyed
	creates int
}

// keyed is what the server keeps under an Idempotency-Key.
type keyed struct {
	ordinal int
	tries   int
	params  string // the request's form, to refuse other parameters
	status  int    // the saved answer, if the endpoint ran
	body    []byte
}

// NewServer starts a Server on loopback. Close it when done.
func NewServer() *Server {
	s := &Server{byID: map[string]*stripego.PaymentIntent{}, indexed: map[string]bool{}, keys: map[string]*keyed{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Client returns a stripe-go client whose requests go to s, with stripe-go's
// own retries off (so that a lost answer reaches the caller) and its
// logging silenced.
func (s *Server) Client() *stripego.Client {
	return stripego.NewClient("sk_test_stripetest", stripego.WithBackends(s.Backends(nil, 0)))
}

// Backends returns stripe-go backends that send to s through hc (nil means
// the httptest server's own client), with retries as stripe-go's own
// retries (MaxNetworkRetries).
func (s *Server) Backends(hc *http.Client, retries int64) *stripego.Backends {
	if hc == nil {
		hc = s.Server.Client()
	}
	return stripego.NewBackendsWithConfig(&stripego.BackendConfig{
		URL:               stripego.String(s.URL),
		HTTPClient:        hc,
		MaxNetworkRetries: stripego.Int64(retries),
		LeveledLogger:     &stripego.LeveledLogger{Level: stripego.LevelNull},
	})
}

// Lag makes the search index stop taking new PaymentIntents (on) or take
// every one at once (off): search then answers as Stripe's does when its
// index is behind.
func (s *Server) Lag(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lagging = on
	if !on {
		for _, pi := range s.pis {
			s.indexed[pi.ID] = true
		}
	}
}

// PaymentIntents returns copies of the PaymentIntents made, oldest first.
func (s *Server) PaymentIntents() []stripego.PaymentIntent {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]stripego.PaymentIntent, len(s.pis))
	for i, pi := range s.pis {
		out[i] = *pi
	}
	return out
}

// Creates returns how many create requests the server received, those it
// answered 503 included.
func (s *Server) Creates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creates
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer sk_") {
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "", "no API key (Authorization: Bearer sk_...)")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "the request could not be read: "+err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch id, one := strings.CutPrefix(r.URL.Path, "/v1/payment_intents/"); {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/payment_intents":
		s.create(w, r)
	case r.Method == http.MethodGet && r.URL.Path == "/v1/payment_intents":
		s.list(w, r.Form)
	case r.Method == http.MethodGet && id == "search":
		s.search(w, r.Form)
	case r.Method == http.MethodGet && one && !strings.Contains(id, "/"):
		pi, ok := s.byID[id]
		if !ok {
			writeError(w, http.StatusNotFound, "invalid_request_error", "resource_missing", "No such payment_intent: '"+id+"'")
			return
		}
		writeJSON(w, http.StatusOK, pi)
	default:
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "Unrecognized request URL ("+r.Method+": "+r.URL.Path+")")
	}
}

// create handles POST /v1/payment_intents, under s.mu.
func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	s.creates++
	idem := r.Header.Get("Idempotency-Key")
	k := s.keys[idem]
	if k == nil || idem == "" || s.ForgetKeys {
		k = &keyed{ordinal: len(s.keys) + 1, params: r.Form.Encode()}
		if idem != "" {
			s.keys[idem] = k
		} else {
			s.keys[fmt.Sprintf("#%d", k.ordinal)] = k
		}
	}
	k.tries++
	if s.Unavailable != nil && s.Unavailable(k.ordinal, k.tries) {
		writeError(w, http.StatusServiceUnavailable, "api_error", "", "the API is unavailable; nothing was done")
		return
	}
	switch {
	case k.status != 0 && k.params != r.Form.Encode():
		writeError(w, http.StatusBadRequest, "idempotency_error", "",
			"Keys for idempotent requests can only be used with the same parameters they were first used with.")
		return
	case k.status != 0:
		w.Header().Set("Idempotent-Replayed", "true")
	default:
		k.params = r.Form.Encode()
		k.status, k.body = s.newPaymentIntent(r.Form)
	}
	if s.LoseAnswer != nil && s.LoseAnswer(k.ordinal, k.tries) {
		loseAnswer(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(k.status)
	_, _ = w.Write(k.body)
}

// newPaymentIntent makes a PaymentIntent from a create's form and returns
// the answer to keep under its key.
func (s *Server) newPaymentIntent(form url.Values) (int, []byte) {
	amount, err := strconv.ParseInt(form.Get("amount"), 10, 64)
	if err != nil || amount <= 0 {
		return errorBody(http.StatusBadRequest, "invalid_request_error", "parameter_invalid_integer", "amount: want a positive integer, got "+strconv.Quote(form.Get("amount")))
	}
	currency := form.Get("currency")
	if len(currency) != 3 {
		return errorBody(http.StatusBadRequest, "invalid_request_error", "parameter_missing", "currency: want a three-letter ISO code, got "+strconv.Quote(currency))
	}
	pi := &stripego.PaymentIntent{
		ID: fmt.Sprintf("pi_fake%06d", len(s.pis)+1), Object: "payment_intent", Amount: amount,
		Currency: stripego.Currency(currency), Created: s.now().Unix(), Metadata: map[string]string{},
		Status: stripego.PaymentIntentStatusRequiresPaymentMethod,
	}
	for name, v := range form {
		if m, ok := strings.CutPrefix(name, "metadata["); ok && strings.HasSuffix(m, "]") && len(v) == 1 {
			pi.Metadata[strings.TrimSuffix(m, "]")] = v[0]
		}
	}
	pm := form.Get("payment_method")
	if pm != "" {
		pi.PaymentMethod = &stripego.PaymentMethod{ID: pm}
		pi.Status = stripego.PaymentIntentStatusRequiresConfirmation
	}
	s.pis = append(s.pis, pi)
	s.byID[pi.ID] = pi
	if !s.lagging {
		s.indexed[pi.ID] = true
	}
	if form.Get("confirm") != "true" || pm == "" {
		return marshal(http.StatusOK, pi)
	}
	if pm == DeclinedCard {
		pi.Status = stripego.PaymentIntentStatusRequiresPaymentMethod
		pi.LastPaymentError = &stripego.Error{Type: stripego.ErrorTypeCard, Code: stripego.ErrorCodeCardDeclined, Msg: "Your card was declined."}
		return marshal(http.StatusPaymentRequired, map[string]any{"error": map[string]any{
			"type": "card_error", "code": "card_declined", "message": "Your card was declined.", "payment_intent": pi}})
	}
	pi.Status = stripego.PaymentIntentStatusSucceeded
	pi.AmountReceived = amount
	return marshal(http.StatusOK, pi)
}

// list handles GET /v1/payment_intents: newest first, under s.mu.
func (s *Server) list(w http.ResponseWriter, form url.Values) {
	limit, ok := parseLimit(form.Get("limit"))
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "limit: want 1 to 100")
		return
	}
	if form.Get("ending_before") != "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "ending_before is not served by this fake")
		return
	}
	match, err := createdFilter(form)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", err.Error())
		return
	}
	after := form.Get("starting_after")
	seenAfter := after == ""
	var data []*stripego.PaymentIntent
	hasMore := false
	for i := len(s.pis) - 1; i >= 0; i-- {
		pi := s.pis[i]
		if !seenAfter {
			seenAfter = pi.ID == after
			continue
		}
		if !match(pi.Created) {
			continue
		}
		if len(data) == limit {
			hasMore = true
			break
		}
		data = append(data, pi)
	}
	if !seenAfter {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "resource_missing", "starting_after: no such payment_intent: '"+after+"'")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "url": "/v1/payment_intents", "has_more": hasMore, "data": nonNil(data)})
}

var searchQuery = regexp.MustCompile(`^metadata\[['"]([^'"]{1,40})['"]\]:['"]([^'"]{1,500})['"]$`)

// search handles GET /v1/payment_intents/search over the index, oldest
// first in pages of limit, under s.mu.
func (s *Server) search(w http.ResponseWriter, form url.Values) {
	limit, ok := parseLimit(form.Get("limit"))
	m := searchQuery.FindStringSubmatch(form.Get("query"))
	if !ok || m == nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "",
			"this fake searches only query=metadata['NAME']:'VALUE' with limit 1 to 100")
		return
	}
	var hits []*stripego.PaymentIntent
	for _, pi := range s.pis {
		if s.indexed[pi.ID] && pi.Metadata[m[1]] == m[2] {
			hits = append(hits, pi)
		}
	}
	from := 0
	if p := form.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > len(hits) {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "", "page: not a page this search gave")
			return
		}
		from = n
	}
	to := min(from+limit, len(hits))
	res := map[string]any{"object": "search_result", "url": "/v1/payment_intents/search", "has_more": to < len(hits), "data": nonNil(hits[from:to])}
	if to < len(hits) {
		res["next_page"] = strconv.Itoa(to)
	}
	writeJSON(w, http.StatusOK, res)
}

func parseLimit(s string) (int, bool) {
	if s == "" {
		return 10, true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1 && n <= 100
}

// createdFilter reads created[gte], created[gt], created[lte] and
// created[lt] (Unix seconds) into a test of a PaymentIntent's created.
func createdFilter(form url.Values) (func(int64) bool, error) {
	bounds := map[string]int64{}
	for _, op := range []string{"gte", "gt", "lte", "lt"} {
		v := form.Get("created[" + op + "]")
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("created[%s]: want Unix seconds, got %q", op, v)
		}
		bounds[op] = n
	}
	return func(c int64) bool {
		for op, n := range bounds {
			if (op == "gte" && c < n) || (op == "gt" && c <= n) || (op == "lte" && c > n) || (op == "lt" && c >= n) {
				return false
			}
		}
		return true
	}, nil
}

// loseAnswer closes the connection without writing anything.
func loseAnswer(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // net/http closes the connection
	}
	conn.Close()
}

func nonNil(pis []*stripego.PaymentIntent) []*stripego.PaymentIntent {
	if pis == nil {
		return []*stripego.PaymentIntent{}
	}
	return pis
}

func errorBody(status int, typ, code, msg string) (int, []byte) {
	e := map[string]string{"type": typ, "message": msg}
	if code != "" {
		e["code"] = code
	}
	return marshal(status, map[string]any{"error": e})
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	status, body := errorBody(status, typ, code, msg)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	status, body := marshal(status, v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func marshal(status int, v any) (int, []byte) {
	b, err := json.Marshal(v)
	if err != nil {
		return http.StatusInternalServerError, []byte(`{"error":{"type":"api_error","message":"the fake could not encode its answer"}}`)
	}
	return status, b
}
