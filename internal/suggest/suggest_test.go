package suggest_test

import (
	"fmt"
	"testing"

	"github.com/agentonce/agentonce/internal/suggest"
)

func TestClosest(t *testing.T) {
	flags := []string{"seed", "store", "server-store", "duration", "json", "v", "kill", "kill-server", "redis"}
	for _, c := range []struct{ typed, want string }{
		{"sed", "seed"},               // one edit, a short name
		{"seeed", "seed"},             // one edit
		{"stroe", "store"},            // two edits
		{"duratoin", "duration"},      // two edits
		{"jsn", "json"},               // one edit, a short name
		{"xyz", ""},                   // three letters: two edits are too many
		{"dur", "duration"},           // the one name it begins
		{"ki", ""},                    // "v" is two edits away, too many for two letters; two names begin with it
		{"server", "server-store"},    // the one name it begins
		{"nosuchflag", ""},            // nothing near
		{"kill-serve", "kill-server"}, // one edit
	} {
		if got := suggest.Closest(c.typed, flags); got != c.want {
			t.Errorf("Closest(%q) = %q; want %q", c.typed, got, c.want)
		}
	}
}

func ExampleClosest() {
	flags := []string{"seed", "store", "duration", "json"}
	fmt.Printf("%q\n", suggest.Closest("sed", flags))
	fmt.Printf("%q\n", suggest.Closest("dur", flags))
	fmt.Printf("%q\n", suggest.Closest("colour", flags))
	// Output:
	// "seed"
	// "duration"
	// ""
}
