package singleflight_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentonce/agentonce/singleflight"
)

// The model asked for the same charge twice in one response. The second
// call joins the first one's flight; when its deadline passes it leaves,
// and the charge goes on for the first caller.
func ExampleGroup_Do() {
	var g singleflight.Group[string, string]
	started, release := make(chan struct{}), make(chan struct{})
	charge := func(ctx context.Context) (string, error) {
		close(started)
		<-release // the payment API is slow
		return "ch_1 created", nil
	}

	first := make(chan string)
	go func() {
		v, err, joined := g.Do(context.Background(), "charge-8812", charge)
		first <- fmt.Sprintf("first:  %q, err=%v, joined=%v", v, err, joined)
	}()
	<-started

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err, joined := g.Do(ctx, "charge-8812", charge)
	fmt.Printf("second: err=%v, joined=%v\n", err, joined)

	close(release)
	fmt.Println(<-first)

	// The flight is over, so the key is free: this runs fn again.
	v, _, joined := g.Do(context.Background(), "charge-8812", func(context.Context) (string, error) {
		return "ch_2 created", nil
	})
	fmt.Printf("later:  %q, joined=%v\n", v, joined)
	// Output:
	// second: err=context deadline exceeded, joined=true
	// first:  "ch_1 created", err=<nil>, joined=false
	// later:  "ch_2 created", joined=false
}

// A panic in fn reaches every caller as a *PanicError; the process goes on.
func ExamplePanicError() {
	var g singleflight.Group[string, int]
	_, err, _ := g.Do(context.Background(), "k", func(context.Context) (int, error) {
		var m map[string]int
		m["x"] = 1 // a bug in the tool
		return 0, nil
	})
	var pe *singleflight.PanicError
	if errors.As(err, &pe) {
		fmt.Println(pe.Value)
		fmt.Println(len(pe.Stack) > 0)
	}
	// Output:
	// assignment to entry in nil map
	// true
}
