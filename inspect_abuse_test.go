package agentonce_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentonce/agentonce"
	"github.com/agentonce/agentonce/harness"
	"github.com/agentonce/agentonce/harness/downstream"
	"github.com/agentonce/agentonce/journal"
)

// abuseEnv names the socket TestInspectAbuser attacks; without it the
// test skips. BenchmarkInspectAbuse starts it as a process of its own.
const abuseEnv = "AGENTONCE_INSPECT_ABUSE"

// TestInspectAbuser is not a test: it is the abusive client of
// BenchmarkInspectAbuse, run in a process of its own so that the agent's
// memory is the agent's alone. It attacks the socket named by
// AGENTONCE_INSPECT_ABUSE until it is killed, at once with one endless
// line, 100 MB lines and up to 19,000 connections that say nothing.
func TestInspectAbuser(t *testing.T) {
	sock := os.Getenv(abuseEnv)
	if sock == "" {
		t.Skip("the abusive client of BenchmarkInspectAbuse; set " + abuseEnv + " to a socket to run it")
	}
	dial := func() (*net.UnixConn, error) {
		return net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	}
	hello := `{"protocol":"agentonce-inspect","version":1}` + "\n"
	chunk := bytes.Repeat([]byte("a"), 1<<20)
	// line writes head and then n MiB (n < 0: without end) on a connection
	// of its own, and does it again once the agent cuts it.
	line := func(head string, n int) {
		for {
			c, err := dial()
			if err != nil {
				time.Sleep(time.Millisecond)
				continue
			}
			go func() { bufio.NewReader(c).ReadString(0) }() // take what the agent answers
			_, err = c.Write([]byte(hello + head))
			for i := 0; err == nil && (n < 0 || i < n); i++ {
				_, err = c.Write(chunk)
			}
			if err == nil {
				c.Write([]byte("\"}\n"))
			}
			c.Close()
		}
	}
	go line(`{"op":"get","key":"`, -1)
	go line(`{"op":"stats","pad":"`, 100)
	slots := make(chan struct{}, 19000)
	for {
		slots <- struct{}{}
		c, err := dial()
		if err != nil {
			<-slots
			time.Sleep(time.Millisecond)
			continue
		}
		go func() {
			var b [256]byte
			for {
				if _, err := c.Read(b[:]); err != nil {
					break
				}
			}
			c.Close()
			<-slots
		}()
	}
}

// peakRSS returns this process's peak resident set (VmHWM) in MiB, and
// resets it when reset is set.
func peakRSS(tb testing.TB, reset bool) float64 {
	tb.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skipf("no /proc/self/status: %v", err)
	}
	var kb float64
	for l := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ = strconv.ParseFloat(f[1], 64)
		}
	}
	if reset {
		os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	}
	return kb / 1024
}

// BenchmarkInspectAbuse: an agent's calls of an HTTP tool (a Keyed charge
// on a loopback API, through downstream.Transport) while another process
// attacks its inspection socket (TestInspectAbuser), beside the same
// calls with nobody on the socket. It reports the agent process's peak
// RSS during each run (MiB-peak-rss).
func BenchmarkInspectAbuse(b *testing.B) {
	if testing.Short() {
		b.Skip("starts an abusive process")
	}
	var served atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"ch_1"}`)
	}))
	defer api.Close()
	client := &http.Client{Transport: &downstream.Transport{}}
	charge := harness.Tool{Name: "http_charge", Effect: journal.Keyed,
		Func: func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, api.URL, bytes.NewReader(in))
			if err != nil {
				return nil, err
			}
			return downstream.ReadJSON(client.Do(req))
		}}
	run := func(b *testing.B, abuse bool) {
		var effects atomic.Int64
		h := servingAgent(b, &effects)
		if err := h.Register(charge); err != nil {
			b.Fatal(err)
		}
		if abuse {
			cmd := exec.Command(os.Args[0], "-test.run=^TestInspectAbuser$", "-test.timeout=0")
			cmd.Env = append(os.Environ(), abuseEnv+"="+agentonce.InspectSocket(h))
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			time.Sleep(2 * time.Second) // let the attack reach its stride
		}
		debug.FreeOSMemory() // so that the peak reported is this run's
		peakRSS(b, true)
		cpu0 := cpuTime()
		var i int
		b.ResetTimer()
		for b.Loop() {
			i++
			res := h.Call(context.Background(), harness.ToolCall{Tenant: "t", Session: "bench", Turn: strconv.Itoa(i),
				Tool: "http_charge", Input: json.RawMessage(`{"amount":4900,"currency":"usd"}`)})
			if !res.OK() {
				b.Fatal(res.Status, res.Err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(i), "cpu-µs/op")
		b.ReportMetric(peakRSS(b, false), "MiB-peak-rss")
	}
	b.Run("baseline", func(b *testing.B) { run(b, false) })
	b.Run("agentonce", func(b *testing.B) { run(b, true) })
}

// cpuTime is the CPU time this process (the agent, its API and the
// benchmark) has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
