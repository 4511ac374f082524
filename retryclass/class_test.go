package retryclass_test

import (
	"errors"
	"testing"

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
