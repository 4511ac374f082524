package agentonce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/inspect"
	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/bolt" // plain paths: bbolt files, the default store
)

// NamespaceEnv names the environment variable Open reads the journal's
// namespace from when OpenOptions.Journal.Namespace is zero: a UUID. Keys are
// derived under the namespace, so a fleet that shares one, or an agent
// whose journal was lost, derives the same keys again, and a Keyed
// downstream still recognises a retry. It is a secret: anyone who has it
// can predict the deployment's keys.
const NamespaceEnv = "AGENTONCE_NAMESPACE"

// OpenOptions configures Open (and OpenJournal): the Harness's Options, as
// for harness.New, and how Open finds, opens and keeps its journal. A nil *OpenOptions means
// defaults; each field's zero value is its default.
type OpenOptions struct {
	// Options configures the Harness itself, as harness.New's do. Its
	// OnClose, if set, runs first when the Harness closes; then Open's own
	// closing (the background GC, the agentctl socket, the journal).
	harness.Options
	// Journal configures the journal that Open opens (for example the
	// namespace a fleet shares, or a lock timeout); nil means defaults.
	// Its Namespace is the namespace of a journal Open creates; zero means
	// NamespaceEnv, else a new random one.
	Journal *journal.Options
	// GCEvery is how often a Harness that Open opened removes its journal's
	// expired records in the background, in small paced batches (calls
	// meanwhile stay within about 1.2× their latency), when the store
	// supports it (BatchGC: bbolt). Zero means DefaultGCEvery (1 hour);
	// negative turns it off (run agentctl gc instead). Unknown and pending
	// records are never removed.
	GCEvery time.Duration
	// RequireJournal makes Open fail with journal.ErrNoJournal instead of
	// creating a journal that does not exist: for deployments that must not
	// start empty (a lost disk would otherwise start a new journal, and
	// with a random namespace, new keys). False, the default, creates it.
	RequireJournal bool
	// Inspect says whether a bbolt file that Open or OpenJournal opened
	// is served to agentctl (read-only inspection, resolve and the event
	// stream) over a unix socket beside it, "<journal>.sock", while the
	// file is locked. Zero, InspectAuto, serves it when it can and
	// otherwise runs without it, saying why to Logger; see InspectMode.
	// A Harness from harness.New, or on PostgreSQL, never serves it.
	Inspect InspectMode
}

// Open opens the journal at location with journal.Open and returns a
// Harness on it; the Harness's Close closes the journal too. A path is a
// bbolt file, created if missing (journal/bolt, which this package links
// in, so that no import is needed for it); a postgres:// URL opens the
// PostgreSQL store shared by a fleet, once the program imports it:
//
//	import _ "github.com/agentonce/agentonce/journal/postgres"
//
// The namespace comes from OpenOptions.Journal.Namespace, else from the
// NamespaceEnv environment variable, else it is made at random with a new
// journal. A journal never silently replaces a lost one: with
// OpenOptions.RequireJournal a missing journal is an error wrapping
// journal.ErrNoJournal, and a new journal with a new random namespace is
// reported (an EventNewJournal and a warning on Options.Logger, by default
// slog.Default()), since every key changes with it.
//
// On a bbolt file, the Harness also serves agentctl over a unix socket
// beside it (OpenOptions.Inspect), since the file's lock keeps agentctl out
// while the agent runs, and removes expired records in the background
// (OpenOptions.GCEvery).
func Open(ctx context.Context, location string, opts *OpenOptions) (*harness.Harness, error) {
	o := *cmp.Or(opts, new(OpenOptions))
	w, err := openWiring(ctx, location, &o)
	if err != nil {
		return nil, err
	}
	w.onClose = o.OnClose
	hopts := o.Options
	if w.path != "" {
		// Every event reaches the socket's followers, after the caller's
		// own Observer; the server is attached once the owner is known.
		w.events = &inspectObserver{next: hopts.Observer}
		hopts.Observer = w.events
	}
	hopts.OnClose = w.close
	w.h = harness.New(w.store, &hopts)
	if err := w.start(ctx, &o, &hopts, w.h.Owner()); err != nil {
		return nil, err
	}
	return w.h, nil
}

// OpenJournal opens the journal at location as Open does, for a program
// that uses it without a Harness: a server's idempotency middleware
// (idempotency.New(store, …)). On a bbolt file it serves agentctl at
// "<journal>.sock" as Open does, so that agentctl ls, show, queue and
// resolve reach the running server, and removes expired records in the
// background. Of opts, Options.Logger and Options.Observer (told of a new
// journal) count; the rest of Options is the Harness's and is ignored.
//
// Call close, not the store's Close, when done: it stops the background
// GC and the socket, then closes the store.
func OpenJournal(ctx context.Context, location string, opts *OpenOptions) (store journal.Store, close func() error, err error) {
	o := *cmp.Or(opts, new(OpenOptions))
	w, err := openWiring(ctx, location, &o)
	if err != nil {
		return nil, nil, err
	}
	if err := w.start(ctx, &o, &o.Options, ""); err != nil {
		return nil, nil, err
	}
	return w.store, sync.OnceValue(w.close), nil
}

// openWiring opens the journal at location as o says (its namespace, and
// whether it may be created), for Open and OpenJournal; start then starts
// what runs beside it.
func openWiring(ctx context.Context, location string, o *OpenOptions) (*wiring, error) {
	jo := *cmp.Or(o.Journal, new(journal.Options))
	w := &wiring{configured: jo.Namespace != uuid.Nil, readOnly: jo.ReadOnly}
	if !w.configured {
		if v := os.Getenv(NamespaceEnv); v != "" {
			ns, err := uuid.Parse(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("agentonce: open %s: %s is not a UUID: %w", location, NamespaceEnv, err)
			}
			jo.Namespace, w.configured, w.fromEnv = ns, true, true
		}
	}
	// A file is looked at before it is created; a store that creates its
	// journal itself says so afterwards (Created), and is only probed
	// first when a missing journal must be refused.
	_, remote := journal.Scheme(location)
	exists := true
	if !remote || o.RequireJournal {
		var err error
		if exists, err = journalExists(ctx, location, &jo); err != nil {
			return nil, err
		}
	}
	if !exists && o.RequireJournal {
		return nil, fmt.Errorf("agentonce: open %s: %w (OpenOptions.RequireJournal; a new journal would start with no record of what was done)", location, journal.ErrNoJournal)
	}
	st, err := journal.Open(ctx, location, &jo)
	if err != nil {
		return nil, err
	}
	if c, ok := st.(interface{ Created() bool }); ok && remote {
		exists = !c.Created()
	}
	w.store, w.location, w.created = st, location, !exists
	if fp, ok := st.(filePath); ok && o.Inspect != InspectOff && !jo.ReadOnly {
		w.path = fp.Path()
	}
	return w, nil
}

// start serves agentctl (owner names the lease owner in its hello),
// reports a new journal to hopts's Observer and Logger, and starts the
// background GC, as o says. On error the journal is closed.
func (w *wiring) start(ctx context.Context, o *OpenOptions, hopts *harness.Options, owner string) error {
	if err := w.serveInspect(o.Inspect, hopts.Logger, owner); err != nil {
		w.store.Close()
		return err
	}
	if w.created {
		reportNewJournal(ctx, hopts, w.location, w.configured, w.fromEnv)
	}
	if gc, ok := w.store.(BatchGC); ok && o.GCEvery >= 0 && !w.readOnly {
		gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		w.stopGC, w.gcDone = cancel, make(chan struct{})
		go func() {
			defer close(w.gcDone)
			collect(gctx, gc, cmp.Or(o.GCEvery, DefaultGCEvery))
		}()
	}
	return nil
}

// journalExists reports whether a journal is at location: a file, or a
// store that a read-only open finds.
func journalExists(ctx context.Context, location string, jo *journal.Options) (bool, error) {
	if _, remote := journal.Scheme(location); !remote {
		_, err := os.Stat(location)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, fs.ErrNotExist):
			return false, nil
		}
		return false, fmt.Errorf("agentonce: open %s: %w", location, err)
	}
	ro := *jo
	ro.ReadOnly = true
	st, err := journal.Open(ctx, location, &ro)
	switch {
	case err == nil:
		return true, st.Close()
	case errors.Is(err, journal.ErrNoJournal):
		return false, nil
	}
	return false, err
}

// reportNewJournal says that Open created a journal: an EventNewJournal to
// the Observer, and a line on the Logger, a warning (on slog.Default()
// when Logger is nil) when its namespace is new and random.
func reportNewJournal(ctx context.Context, o *harness.Options, location string, configured, fromEnv bool) {
	e := harness.Event{Kind: harness.EventNewJournal}
	if !configured {
		e.Err = errors.New("a new journal with a new random namespace: every key differs from any earlier journal's, and a downstream's own deduplication will not recognise retries of earlier intents")
	}
	if o.Observer != nil {
		o.Observer.Observe(ctx, e)
	}
	if !configured {
		cmp.Or(o.Logger, slog.Default()).WarnContext(ctx, "agentonce created a new journal with a new random namespace",
			slog.String("journal", location),
			slog.String("why it matters", "keys of intents made before this journal do not carry over"),
			slog.String("fix", "configure the namespace (agentonce OpenOptions.Journal.Namespace or "+NamespaceEnv+"), or OpenOptions.RequireJournal to refuse a missing journal"))
		return
	}
	if o.Logger == nil {
		return
	}
	src := "OpenOptions.Journal.Namespace"
	if fromEnv {
		src = NamespaceEnv
	}
	o.Logger.InfoContext(ctx, "agentonce created a new journal", slog.String("journal", location), slog.String("namespace from", src))
}

// wiring is what Open and OpenJournal add beside a journal: the agentctl
// socket and the background GC. Its close ends them (a Harness's
// Options.OnClose), and then closes the journal.
type wiring struct {
	h        *harness.Harness // nil for OpenJournal
	store    journal.Store
	location string
	onClose  func() error     // the caller's Options.OnClose, run first
	path     string           // the bbolt file, when agentctl may be served
	events   *inspectObserver // a Harness's events for the socket; nil if none
	srv      *inspect.Server  // serving agentctl; nil if not
	readOnly bool
	// created says the journal is new; configured, that its namespace was
	// given (fromEnv: by NamespaceEnv), not made at random.
	created, configured, fromEnv bool
	// stopGC ends the background GC (nil if none); gcDone is closed when
	// it has ended.
	stopGC context.CancelFunc
	gcDone chan struct{}
}

// close runs the caller's OnClose, ends the background GC, stops serving
// agentctl and closes the journal, in that order: agentctl's requests use
// the journal, and the socket must be gone before the file's lock is
// released. The first error is returned.
func (w *wiring) close() error {
	var uerr error
	if w.onClose != nil {
		uerr = w.onClose()
	}
	if w.stopGC != nil {
		w.stopGC()
		<-w.gcDone
	}
	var ierr error
	if w.srv != nil {
		served.Delete(w.h)
		ierr = w.srv.Close()
	}
	serr := w.store.Close()
	return cmp.Or(uerr, serr, ierr)
}
