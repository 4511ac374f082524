package retryclass_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/agentonce/agentonce/retryclass"
)

// naiveClassify is the baseline: what code without this package tends to
// do, matching on the error's text.
func naiveClassify(err error) retryclass.Class {
	switch s := err.Error(); {
	case strings.Contains(s, "connection refused"), strings.Contains(s, "no such host"):
		return retryclass.NotExecuted
	case strings.Contains(s, "422"):
		return retryclass.Mismatch
	case strings.Contains(s, "409"):
		return retryclass.InFlight
	default:
		return retryclass.MaybeExecuted
	}
}

func BenchmarkClassify(b *testing.B) {
	refused := &url.Error{Op: "Post", URL: "http://127.0.0.1:1/charge", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}
	cases := []struct {
		name string
		err  error
	}{
		{"refused", refused},
		{"status", fmt.Errorf("charge: %w", &retryclass.StatusError{Method: "POST", URL: "http://x/charge", Status: 422})},
		{"marker", retryclass.Permanent(fmt.Errorf("validate: %w", context.Canceled))},
		{"unknown", fmt.Errorf("tool: %w", fmt.Errorf("step: %w", os.ErrInvalid))},
	}
	for _, c := range cases {
		b.Run(c.name+"/agentonce", func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				retryclass.ClassifyContext(ctx, c.err)
			}
		})
		b.Run(c.name+"/baseline", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				naiveClassify(c.err)
			}
		})
	}
}

func BenchmarkScheduleNext(b *testing.B) {
	v := retryclass.Verdict{Class: retryclass.NotExecuted}
	ctx := context.Background()
	b.Run("agentonce", func(b *testing.B) {
		b.ReportAllocs()
		p := &retryclass.Policy{MaxAttempts: 3, MaxElapsed: -1}
		for b.Loop() {
			s := p.NewSchedule()
			s.Next(ctx, v)
			s.Next(ctx, v)
		}
	})
	b.Run("baseline", func(b *testing.B) {
		// cenkalti/backoff used directly, as a tool would without us.
		b.ReportAllocs()
		for b.Loop() {
			bo := newBackoff()
			bo.NextBackOff()
			bo.NextBackOff()
		}
	})
}
