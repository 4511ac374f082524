package journal

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// openFunc opens the journal at a location of its scheme; opts may be nil.
type openFunc func(ctx context.Context, location string, opts *Options) (Store, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]openFunc{}
)

// Register makes a store available to Open for locations that start with
// scheme followed by "://" (compared without regard to case); [PathScheme]
// also takes plain paths. A store package registers itself from an init
// function, so that importing it for its side effect is enough:
//
//	import _ "github.com/agentonce/agentonce/journal/postgres"
//
// O is the store's own options type: open gets Open's Options, their
// StoreOptions cleared, and a copy of the *O they held (zero when nil).
// Register panics if scheme is empty, contains "://", is registered twice,
// or open is nil.
func Register[O any](scheme string, open func(ctx context.Context, location string, opts Options, so O) (Store, error)) {
	s := strings.ToLower(scheme)
	if s == "" || strings.Contains(s, "://") || open == nil {
		panic(fmt.Sprintf("journal: Register(%q): invalid scheme or nil open function", scheme))
	}
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[s]; dup {
		panic(fmt.Sprintf("journal: Register(%q) called twice", scheme))
	}
	openers[s] = func(ctx context.Context, location string, opts *Options) (Store, error) {
		var o Options
		var so O
		if opts != nil {
			o = *opts
			o.StoreOptions = nil
			switch p := opts.StoreOptions.(type) {
			case nil:
			case *O:
				if p != nil {
					so = *p
				}
			default:
				return nil, fmt.Errorf("journal: open %s: %w: Options.StoreOptions is a %T; this store takes a %T",
					redact(location), ErrInvalid, p, (*O)(nil))
			}
		}
		return open(ctx, location, o, so)
	}
}

// PathScheme is the scheme whose store opens a plain path (journal/bolt's).
const PathScheme = "file"

// Open opens the journal at location: by its scheme ("postgres://…"), or
// a plain path by PathScheme's store. An unregistered scheme is an error
// naming the schemes known. opts may be nil.
func Open(ctx context.Context, location string, opts *Options) (Store, error) {
	scheme, ok := Scheme(location)
	if !ok {
		scheme = PathScheme
	}
	openersMu.RLock()
	open := openers[strings.ToLower(scheme)]
	openersMu.RUnlock()
	switch {
	case open == nil && !ok:
		return nil, fmt.Errorf("journal: open %s: no store registered for plain paths (known: %s); "+
			"for a bbolt file, import _ \"github.com/agentonce/agentonce/journal/bolt\" (package agentonce does)",
			location, knownSchemes())
	case open == nil:
		return nil, fmt.Errorf("journal: open %s://…: no store registered for scheme %q (known: %s); "+
			"for PostgreSQL, import _ \"github.com/agentonce/agentonce/journal/postgres\"",
			scheme, scheme, knownSchemes())
	}
	return open(ctx, location, opts)
}

// Scheme returns a location's scheme; ok is false for a plain path.
func Scheme(location string) (scheme string, ok bool) {
	scheme, _, ok = strings.Cut(location, "://")
	return scheme, ok && !strings.ContainsAny(scheme, `/\`)
}

// redact names a location without what its URL may carry (a password).
func redact(location string) string {
	if scheme, ok := Scheme(location); ok {
		return scheme + "://…"
	}
	return location
}

func knownSchemes() string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	if len(openers) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(openers)), ", ")
}
