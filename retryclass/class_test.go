package retryclass_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentonce/agentonce/retryclass"
)

func TestClassStringRoundTrip(t *testing.T) {
	want := map[retryclass.Class]string{
		retryclass.Success:       "success",
		retryclass.NotExecuted:   "not-executed",
		retryclass.MaybeExecuted: "maybe-executed",
		retryclass.InFlight:      "in-flight",
		retryclass.Mismatch:      "mismatch",
		retryclass.Terminal:      "terminal",
		retryclass.Canceled:      "canceled",
	}
	for c, name := range want {
		if got := c.String(); got != name {
			t.Errorf("%d.String() = %q; want %q", c, got, name)
		}
		got, err := retryclass.ParseClass(name)
		if err != nil || got != c {
			t.Errorf("ParseClass(%q) = %v, %v; want %v, nil", name, got, err, c)
		}
	}
	if got := retryclass.Class(200).String(); got != "class(200)" {
		t.Errorf("Class(200).String() = %q; want %q", got, "class(200)")
	}
	for _, bad := range []string{"", "Success", "retryable", "class(200)"} {
		_, err := retryclass.ParseClass(bad)
		if !errors.Is(err, retryclass.ErrUnknownClass) {
			t.Errorf("ParseClass(%q) error = %v; want ErrUnknownClass", bad, err)
		}
	}
}

func TestClassPredicates(t *testing.T) {
	tests := []struct {
		c                      retryclass.Class
		retryable, suppressing bool
	}{
		{retryclass.Success, false, false},
		{retryclass.NotExecuted, true, false},
		{retryclass.MaybeExecuted, true, false},
		{retryclass.InFlight, true, true},
		{retryclass.Mismatch, false, true},
		{retryclass.Terminal, false, false},
		{retryclass.Canceled, false, false},
		{retryclass.Class(99), false, false},
	}
	for _, tt := range tests {
		if got := tt.c.Retryable(); got != tt.retryable {
			t.Errorf("%v.Retryable() = %v; want %v", tt.c, got, tt.retryable)
		}
		if got := tt.c.Suppressing(); got != tt.suppressing {
			t.Errorf("%v.Suppressing() = %v; want %v", tt.c, got, tt.suppressing)
		}
	}
}

func TestMarkersNilSafeAndTransparent(t *testing.T) {
	markers := map[string]func(error) error{
		"Permanent":         retryclass.Permanent,
		"MarkNotExecuted":   retryclass.MarkNotExecuted,
		"MarkMaybeExecuted": retryclass.MarkMaybeExecuted,
		"Suppress":          retryclass.Suppress,
		"WithRetryAfter":    func(err error) error { return retryclass.WithRetryAfter(err, time.Second) },
	}
	base := fmt.Errorf("charge 8812: %w", io.ErrShortWrite)
	for name, mark := range markers {
		if got := mark(nil); got != nil {
			t.Errorf("%s(nil) = %v; want nil", name, got)
		}
		err := mark(base)
		if err.Error() != base.Error() {
			t.Errorf("%s(err).Error() = %q; want %q", name, err.Error(), base.Error())
		}
		if !errors.Is(err, io.ErrShortWrite) {
			t.Errorf("errors.Is(%s(err), io.ErrShortWrite) = false; want true", name)
		}
	}
}

func TestSuppressionText(t *testing.T) {
	for _, c := range []retryclass.Class{retryclass.InFlight, retryclass.Mismatch} {
		s := retryclass.SuppressionText(retryclass.Verdict{Class: c})
		for _, must := range []string{"Not repeated", "not an input error", "Do not retry", "do not change its input"} {
			if !strings.Contains(s, must) {
				t.Errorf("SuppressionText(%v) = %q; want it to contain %q", c, s, must)
			}
		}
		if len(s) > 160 {
			t.Errorf("SuppressionText(%v) is %d bytes; want it short (<= 160)", c, len(s))
		}
	}
	if a, b := retryclass.SuppressionText(retryclass.Verdict{Class: retryclass.InFlight}),
		retryclass.SuppressionText(retryclass.Verdict{Class: retryclass.Mismatch}); a == b {
		t.Errorf("in-flight and mismatch texts are the same: %q", a)
	}
}

// FuzzParseClass checks that ParseClass accepts exactly the names String
// writes.
func FuzzParseClass(f *testing.F) {
	for c := range retryclass.Canceled + 2 {
		f.Add(c.String())
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := retryclass.ParseClass(s)
		if err != nil {
			if !errors.Is(err, retryclass.ErrUnknownClass) || !strings.Contains(err.Error(), fmt.Sprintf("%q", s)) {
				t.Fatalf("ParseClass(%q) error = %v; want ErrUnknownClass naming the input", s, err)
			}
			return
		}
		if c.String() != s {
			t.Fatalf("ParseClass(%q) = %v; String() = %q", s, c, c.String())
		}
	})
}
