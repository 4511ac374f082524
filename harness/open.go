package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	_ "github.com/agentonce/agentonce/journal/bolt" // plain paths: bbolt files, the default store
)

// NamespaceEnv names the environment variable Open reads the journal's
// namespace from when Options.Journal.Namespace is zero: a UUID. Keys are
// derived under the namespace, so a fleet that shares one, or an agent
// whose journal was lost, derives the same keys again, and a Keyed
// downstream still recognises a retry. It is a secret: anyone who has it
// can predict the deployment's keys.
const NamespaceEnv = "AGENTONCE_NAMESPACE"

// Open opens the journal at location with journal.Open and returns a
// Harness on it; Close closes the journal too. A path is a bbolt file,
// created if missing (journal/bolt, which this package links in, so that
// no import is needed for it); a postgres:// URL opens the
// PostgreSQL store shared by a fleet, once the program imports it:
//
//	import _ "github.com/agentonce/agentonce/journal/postgres"
//
// The namespace comes from Options.Journal.Namespace, else from the
// NamespaceEnv environment variable, else it is made at random with a new
// journal. A journal never silently replaces a lost one: with
// Options.RequireJournal a missing journal is an error wrapping
// journal.ErrNoJournal, and a new journal with a new random namespace is
// reported (an EventNewJournal and a warning on Options.Logger), since
// every key changes with it.
//
// On a bbolt file, the Harness also serves agentctl over a unix socket
// beside it (Options.Inspect), since the file's lock keeps agentctl out
// while the agent runs.
func Open(ctx context.Context, location string, opts *Options) (*Harness, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	var jo journal.Options
	if o.Journal != nil {
		jo = *o.Journal
	}
	fromEnv := false
	if jo.Namespace == uuid.Nil {
		if v := os.Getenv(NamespaceEnv); v != "" {
			ns, err := uuid.Parse(strings.TrimSpace(v))
			if err != nil {
				return nil, fmt.Errorf("harness: open %s: %s is not a UUID: %w", location, NamespaceEnv, err)
			}
			jo.Namespace, fromEnv = ns, true
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
		return nil, fmt.Errorf("harness: open %s: %w (Options.RequireJournal; a new journal would start with no record of what was done)", location, journal.ErrNoJournal)
	}
	st, err := journal.Open(ctx, location, &jo)
	if err != nil {
		return nil, err
	}
	if c, ok := st.(interface{ Created() bool }); ok && remote {
		exists = !c.Created()
	}
	o.Journal = &jo
	h := New(st, &o)
	h.ownStore = true
	if err := h.serveInspect(); err != nil {
		st.Close()
		return nil, err
	}
	if !exists {
		h.reportNewJournal(ctx, location, jo.Namespace != uuid.Nil, fromEnv)
	}
	if gc, ok := st.(BatchGC); ok && o.GCEvery >= 0 && !jo.ReadOnly {
		every := o.GCEvery
		if every == 0 {
			every = DefaultGCEvery
		}
		gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		h.stopGC, h.gcDone = cancel, make(chan struct{})
		go func() {
			defer close(h.gcDone)
			h.collect(gctx, gc, every)
		}()
	}
	return h, nil
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
		return false, fmt.Errorf("harness: open %s: %w", location, err)
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

// reportNewJournal says that Open created a journal: an event, and a
// warning when its namespace is new and random (every key changed).
func (h *Harness) reportNewJournal(ctx context.Context, location string, configured, fromEnv bool) {
	e := Event{Kind: EventNewJournal}
	if !configured {
		e.Err = errors.New("a new journal with a new random namespace: every key differs from any earlier journal's, and a downstream's own deduplication will not recognise retries of earlier intents")
	}
	h.emit(ctx, e)
	if h.opts.Logger == nil {
		return
	}
	if !configured {
		h.opts.Logger.WarnContext(ctx, "agentonce created a new journal with a new random namespace",
			slog.String("journal", location),
			slog.String("why it matters", "keys of intents made before this journal do not carry over"),
			slog.String("fix", "configure the namespace (harness Options.Journal.Namespace or "+NamespaceEnv+"), or Options.RequireJournal to refuse a missing journal"))
		return
	}
	src := "Options.Journal.Namespace"
	if fromEnv {
		src = NamespaceEnv
	}
	h.opts.Logger.InfoContext(ctx, "agentonce created a new journal", slog.String("journal", location), slog.String("namespace from", src))
}
