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
// namespace (a UUID) from when none is configured. It is a secret.
const NamespaceEnv = "AGENTONCE_NAMESPACE"

// OpenOptions configures Open and OpenJournal. A nil *OpenOptions means
// defaults; each field's zero value is its default.
type OpenOptions struct {
	// Options configures the Harness; its OnClose runs first at Close.
	harness.Options
	// Journal configures the journal; nil means defaults. A zero Namespace
	// means NamespaceEnv, else a random one for a new journal.
	Journal *journal.Options
	// GCEvery is how often expired records are removed in the background
	// on a store that supports it (BatchGC). Zero means DefaultGCEvery;
	// negative turns it off.
	GCEvery time.Duration
	// RequireJournal refuses, with journal.ErrNoJournal, to create a
	// journal that does not exist.
	RequireJournal bool
	// Inspect says whether a bbolt file is served to agentctl over a unix
	// socket beside it (InspectMode).
	Inspect InspectMode
}

// Open opens the journal at location with journal.Open and returns a
// Harness on it, whose Close closes the journal too. A new journal with a
// new random namespace is reported (EventNewJournal, and a warning). On a
// bbolt file the Harness serves agentctl beside it and removes expired
// records.
func Open(ctx context.Context, location string, opts *OpenOptions) (*harness.Harness, error) {
	o := *cmp.Or(opts, new(OpenOptions))
	w, err := openWiring(ctx, location, &o)
	if err != nil {
		return nil, err
	}
	w.onClose = o.OnClose
	hopts := o.Options
	if w.path != "" { // events reach the socket's followers too
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
// without a Harness (idempotency.New). Of opts.Options only Logger and
// Observer count. Call close, not the store's Close.
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

// openWiring opens the journal at location as o says.
func openWiring(ctx context.Context, location string, o *OpenOptions) (*wiring, error) {
	jo := *cmp.Or(o.Journal, new(journal.Options))
	w := &wiring{readOnly: jo.ReadOnly}
	if jo.Namespace != uuid.Nil {
		w.nsFrom = "OpenOptions.Journal.Namespace"
	} else if v := os.Getenv(NamespaceEnv); v != "" {
		ns, err := uuid.Parse(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("agentonce: open %s: %s is not a UUID: %w", location, NamespaceEnv, err)
		}
		jo.Namespace, w.nsFrom = ns, NamespaceEnv
	}
	// A file is looked at first; a remote store says afterwards (Created),
	// and is probed first only when a missing journal must be refused.
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

// start starts what runs beside the journal; on error it closes it.
func (w *wiring) start(ctx context.Context, o *OpenOptions, hopts *harness.Options, owner string) error {
	if err := w.serveInspect(o.Inspect, hopts.Observer, hopts.Logger, owner); err != nil {
		w.store.Close()
		return err
	}
	if w.created {
		reportNewJournal(ctx, hopts, w.location, w.nsFrom)
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

// journalExists reports whether a journal is at location.
func journalExists(ctx context.Context, location string, jo *journal.Options) (bool, error) {
	if _, remote := journal.Scheme(location); !remote {
		_, err := os.Stat(location)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("agentonce: open %s: %w", location, err)
		}
		return err == nil, nil
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

// reportNewJournal reports a new journal (warning of a random namespace).
func reportNewJournal(ctx context.Context, o *harness.Options, location, nsFrom string) {
	e := harness.Event{Kind: harness.EventNewJournal}
	if nsFrom == "" {
		e.Err = errors.New("a new journal with a new random namespace: every key differs from any earlier journal's, and a downstream's own deduplication will not recognise retries of earlier intents")
	}
	if o.Observer != nil {
		o.Observer.Observe(ctx, e)
	}
	switch {
	case nsFrom == "":
		cmp.Or(o.Logger, slog.Default()).WarnContext(ctx, "agentonce created a new journal with a new random namespace",
			slog.String("journal", location),
			slog.String("why it matters", "keys of intents made before this journal do not carry over"),
			slog.String("fix", "configure the namespace (agentonce OpenOptions.Journal.Namespace or "+NamespaceEnv+"), or OpenOptions.RequireJournal to refuse a missing journal"))
	case o.Logger != nil:
		o.Logger.InfoContext(ctx, "agentonce created a new journal", slog.String("journal", location), slog.String("namespace from", nsFrom))
	}
}

// wiring is what Open and OpenJournal add beside a journal.
type wiring struct {
	h        *harness.Harness // nil for OpenJournal
	store    journal.Store
	location string
	onClose  func() error     // the caller's Options.OnClose, run first
	path     string           // the bbolt file, when agentctl may be served
	events   *inspectObserver // a Harness's events for the socket; nil if none
	srv      *inspect.Server  // serving agentctl; nil if not
	readOnly bool
	created  bool               // the journal is new
	nsFrom   string             // where its namespace came from; "": made at random
	stopGC   context.CancelFunc // ends the background GC (nil if none)
	gcDone   chan struct{}      // closed when it has ended
}

// close runs the caller's OnClose, ends the background GC, stops serving
// agentctl and closes the journal, in that order.
func (w *wiring) close() error {
	var uerr, ierr error
	if w.onClose != nil {
		uerr = w.onClose()
	}
	if w.stopGC != nil {
		w.stopGC()
		<-w.gcDone
	}
	if w.srv != nil {
		served.Delete(w.h)
		ierr = w.srv.Close()
	}
	serr := w.store.Close()
	return cmp.Or(uerr, serr, ierr)
}
