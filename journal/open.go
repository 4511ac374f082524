package journal

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// OpenFunc opens the journal at a location whose scheme it was registered
// for (see Register). opts may be nil.
type OpenFunc func(ctx context.Context, location string, opts *Options) (Store, error)

var (
	openersMu sync.RWMutex
	openers   = map[string]OpenFunc{}
)

// Register makes a store available to Open for locations that start with
// scheme followed by "://" (compared without regard to case). The scheme
// [PathScheme] also takes plain paths: journal/bolt registers it. A store
// package registers itself from an init function, in the database/sql
// style, so that importing it for its side effect is enough:
//
//	import _ "github.com/agentonce/agentonce/journal/postgres"
//
// Package agentonce imports journal/bolt, so a program that opens a journal
// through agentonce.Open needs no import for a bbolt file.
//
// Register panics if scheme is empty, contains "://", is registered twice,
// or open is nil: each is a programming error found at start-up.
func Register(scheme string, open OpenFunc) {
	s := strings.ToLower(scheme)
	if s == "" || strings.Contains(s, "://") || open == nil {
		panic(fmt.Sprintf("journal: Register(%q): invalid scheme or nil OpenFunc", scheme))
	}
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[s]; dup {
		panic(fmt.Sprintf("journal: Register(%q) called twice", scheme))
	}
	openers[s] = open
}

// PathScheme is the scheme whose store Open calls for a location without
// one, a plain path: journal/bolt registers it for bbolt files, and takes
// "file://path" as well.
const PathScheme = "file"

// Open opens the journal at location. A location with a scheme
// ("postgres://…") goes to the store registered for that scheme; a plain
// path goes to the store registered for PathScheme, the bbolt file of
// journal/bolt (created if missing). A scheme nobody registered is an
// error that names the scheme and the schemes known. opts may be nil.
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

// Scheme returns the scheme of a location that names a store by scheme
// ("postgres" for "postgres://…"); ok is false for a plain path, which Open
// gives to the store registered for PathScheme.
func Scheme(location string) (scheme string, ok bool) {
	scheme, _, ok = strings.Cut(location, "://")
	return scheme, ok && !strings.ContainsAny(scheme, `/\`)
}

func knownSchemes() string {
	openersMu.RLock()
	defer openersMu.RUnlock()
	if len(openers) == 0 {
		return "none"
	}
	names := make([]string, 0, len(openers))
	for s := range openers {
		names = append(names, s)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
