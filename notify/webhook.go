package notify

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/retryclass"
)

// The events a Notice tells of.
const (
	NeedsPerson = "needs-person" // an intent needs a person to settle it
	Resolved    = "resolved"     // a person settled it
)

// Notice is the JSON body of one POST. ID is its own (and the POST's
// Idempotency-Key), Key the journal's; Class and Message say why a person
// is needed, or how it was Resolved; Command settles it.
type Notice struct {
	ID      string    `json:"id"`
	Event   string    `json:"event"`
	Key     string    `json:"key"`
	Tool    string    `json:"tool,omitempty"`
	Session string    `json:"session,omitempty"`
	Turn    string    `json:"turn,omitempty"`
	Class   string    `json:"class,omitempty"`
	Message string    `json:"message,omitempty"`
	Command string    `json:"command,omitempty"`
	At      time.Time `json:"at"`
}

// Options configures a Webhook. A nil *Options means defaults; each
// field's zero value is its default.
type Options struct {
	// Client sends the notices; nil means one with a 10 s timeout.
	Client *http.Client
	// QueueSize bounds the notices waiting to be sent; zero means 256.
	QueueSize int
	// MaxAttempts bounds the tries (not retries) of one notice; zero means 5.
	MaxAttempts int
	// MaxElapsed bounds the time spent on one notice; zero means a minute.
	MaxElapsed time.Duration
	// Logger is told of every notice dropped or given up; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Stats counts a Webhook's notices, each once.
type Stats struct {
	Sent    uint64 // answered 2xx
	Failed  uint64 // given up: a 4xx other than 429, or out of tries or time
	Dropped uint64 // refused by a full queue, or unsent at Close
}

// maxResponse bounds what is read of a receiver's answer.
const maxResponse = 64 << 10

// Webhook posts notices to one URL. It is safe for concurrent use.
type Webhook struct {
	url    string
	where  string // scheme and host, for logs: a URL's path may be secret
	secret []byte
	o      Options // defaults filled in
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the sender has ended

	mu     sync.RWMutex // guards closed, and q against a send after close
	q      chan Notice
	closed bool

	sent, failed, dropped atomic.Uint64
}

// New returns a Webhook that posts to rawURL, an http or https URL,
// signing with secret (at least 16 bytes), and starts its sender.
func New(rawURL string, secret []byte, opts *Options) (*Webhook, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("notify.New: URL %q is not an absolute http or https URL", rawURL)
	}
	if len(secret) < 16 {
		return nil, fmt.Errorf("notify.New: the secret is %d bytes; at least 16 are needed to sign", len(secret))
	}
	w := &Webhook{url: rawURL, where: u.Scheme + "://" + u.Host, secret: bytes.Clone(secret), done: make(chan struct{})}
	if opts != nil {
		w.o = *opts
	}
	w.o.Client = cmp.Or(w.o.Client, &http.Client{Timeout: 10 * time.Second})
	w.o.QueueSize = cmp.Or(max(w.o.QueueSize, 0), 256)
	w.o.MaxAttempts = cmp.Or(max(w.o.MaxAttempts, 0), 5)
	w.o.MaxElapsed = cmp.Or(max(w.o.MaxElapsed, 0), time.Minute)
	w.o.Logger = cmp.Or(w.o.Logger, slog.Default())
	w.q = make(chan Notice, w.o.QueueSize)
	w.ctx, w.cancel = context.WithCancel(context.Background())
	go w.send()
	return w, nil
}

// Observe queues a notice for an EventNeedsPerson.
func (w *Webhook) Observe(_ context.Context, e harness.Event) {
	if e.Kind != harness.EventNeedsPerson {
		return
	}
	n := Notice{Event: NeedsPerson, Key: e.Key.String(), Tool: e.Tool, Session: e.Session, Turn: e.Turn, Command: e.Command}
	if e.Class != retryclass.Success {
		n.Class = e.Class.String()
	}
	if e.Err != nil {
		n.Message = e.Err.Error()
	}
	w.queue(n, e.Resolution)
}

// Record queues a notice for a record of the idempotency middleware
// (idempotency.Options.OnUnknown, inspect.ServerOptions.OnResolve).
func (w *Webhook) Record(_ context.Context, rec journal.Record) {
	k := rec.Key.String()
	w.queue(Notice{Event: NeedsPerson, Key: k, Tool: rec.Intent.Tool, Session: rec.Intent.Session, Class: rec.ErrorClass,
		Message: rec.ErrorMessage, Command: "agentctl resolve " + k +
			" --succeeded --status CODE [--header 'NAME: VALUE']... [--body TEXT] | --failed --reason TEXT"}, rec.Resolution)
}

// queue adds n (Resolved by r if set) without waiting, or drops it.
func (w *Webhook) queue(n Notice, r *journal.Resolution) {
	if r != nil {
		n.Event, n.Class, n.Command = Resolved, "", ""
		n.Message = fmt.Sprintf("resolved %s by %s: %s", r.State, r.By, r.Reason)
	}
	n.At = time.Now().UTC()
	w.mu.RLock()
	defer w.mu.RUnlock()
	if !w.closed {
		select {
		case w.q <- n:
			return
		default:
		}
	}
	w.o.Logger.Warn("notify: webhook queue full or closed; notice dropped",
		"event", n.Event, "key", n.Key, "dropped", w.dropped.Add(1))
}

// send posts the queued notices, one at a time, until Close.
func (w *Webhook) send() {
	defer close(w.done)
	for n := range w.q {
		if w.ctx.Err() != nil {
			w.dropped.Add(1)
			continue
		}
		n.ID = uuid.NewString()
		if err := w.deliver(n); err != nil {
			w.o.Logger.Error("notify: webhook gave up on a notice", "event", n.Event, "key", n.Key,
				"error", err.Error(), "failed", w.failed.Add(1))
		} else {
			w.sent.Add(1)
		}
	}
}

// deliver posts n, retrying network errors, 5xx and 429.
func (w *Webhook) deliver(n Notice) error {
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(w.ctx, w.o.MaxElapsed)
	defer cancel()
	post := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
		if err != nil {
			return backoff.Permanent(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", n.ID)
		req.Header.Set(SignatureHeader, sign(w.secret, time.Now(), body))
		resp, err := w.o.Client.Do(req)
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			ue.URL = w.where
		}
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
		if resp.StatusCode/100 == 2 {
			return nil
		}
		err = fmt.Errorf("%s answered %s: %.200q", w.where, resp.Status, answer)
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests {
			return err
		}
		return backoff.Permanent(err)
	}
	b := backoff.NewExponentialBackOff(backoff.WithMaxElapsedTime(w.o.MaxElapsed))
	return backoff.Retry(post, backoff.WithContext(backoff.WithMaxRetries(b, uint64(w.o.MaxAttempts-1)), ctx))
}

// Stats returns the counts so far.
func (w *Webhook) Stats() Stats {
	return Stats{Sent: w.sent.Load(), Failed: w.failed.Load(), Dropped: w.dropped.Load()}
}

// Close stops taking notices and sends those queued until ctx ends; then
// the rest are dropped, and it returns ctx's error.
func (w *Webhook) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.q)
	}
	w.mu.Unlock()
	defer w.cancel()
	select {
	case <-w.done:
		return nil
	default:
	}
	before := w.dropped.Load()
	stop := context.AfterFunc(ctx, w.cancel)
	if <-w.done; stop() {
		return nil
	}
	unsent := w.dropped.Load() - before
	w.o.Logger.Warn("notify: webhook closed before its queue was sent", "unsent", unsent)
	return fmt.Errorf("notify: closed with %d notices unsent: %w", unsent, ctx.Err())
}
