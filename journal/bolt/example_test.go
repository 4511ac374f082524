package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
	"github.com/agentonce/agentonce/journal/bolt"
)

// A journal file keeps its namespace and records across opens.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "journal")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent.journal")

	s, err := bolt.Open(path, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ns := s.Namespace()
	s.Close()

	s, err = bolt.Open(path, &bolt.Options{Journal: journal.Options{ReadOnly: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fmt.Println(s.Namespace() == ns)
	_, err = s.Begin(context.Background(), journal.BeginRequest{Key: uuid.New()})
	fmt.Println(errors.Is(err, journal.ErrReadOnly))
	// Output:
	// true
	// true
}

// Compact copies a journal into a new, dense file.
func ExampleCompact() {
	dir, _ := os.MkdirTemp("", "journal")
	defer os.RemoveAll(dir)
	src, dst := filepath.Join(dir, "agent.journal"), filepath.Join(dir, "agent.journal.compact")
	s, _ := bolt.Open(src, nil)
	s.Close()

	err := bolt.Compact(context.Background(), src, dst, func(done, total int64) {
		fmt.Printf("%d/%d records\n", done, total)
	})
	fmt.Println(err)
	// Output:
	// <nil>
}
