package approval_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentonce/agentonce/journal"
)

// chrome is a headless chromium driven over the DevTools protocol on a
// pipe (--remote-debugging-pipe: JSON messages ended by NUL on fds 3 and
// 4), so that the test can type and click as a person does.
type chrome struct {
	t       *testing.T
	in      *os.File      // chromium's fd 3
	out     *bufio.Reader // chromium's fd 4
	id      int
	session string
}

// chromiumPath finds Debian's headless browser, or skips the test (fails
// it when AGENTONCE_REQUIRE_CHROMIUM=1, as CI sets).
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not in PATH (apt-get install -y chromium); the approval page's browser test needs it"
	if os.Getenv("AGENTONCE_REQUIRE_CHROMIUM") == "1" {
		t.Fatal(msg + " and AGENTONCE_REQUIRE_CHROMIUM=1")
	}
	t.Skip(msg)
	return ""
}

// startChrome starts chromium with one page of width by height CSS
// pixels, every request but loopback's sent to a proxy that is not there.
func startChrome(t *testing.T, width, height int) *chrome {
	bin := chromiumPath(t)
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, bin, "--headless", "--remote-debugging-pipe", "--disable-gpu", "--no-sandbox",
		"--no-first-run", "--no-default-browser-check", "--user-data-dir="+t.TempDir(), "--proxy-server=http://127.0.0.1:9",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--hide-scrollbars", "about:blank")
	cmd.ExtraFiles = []*os.File{inR, outW}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		cmd.Wait()
		if t.Failed() {
			t.Logf("chromium's stderr:\n%s", errb.String())
		}
	})
	c := &chrome{t: t, in: inW, out: bufio.NewReader(outR)}
	var created struct{ TargetID string }
	c.call("Target.createTarget", map[string]any{"url": "about:blank", "newWindow": false}, &created)
	var attached struct{ SessionID string }
	c.call("Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached)
	c.session = attached.SessionID
	c.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}, nil)
	c.call("Network.enable", nil, nil)
	return c
}

// call sends one command (to the page once attached) and decodes its
// result into v; events in between are skipped.
func (c *chrome) call(method string, params any, v any) {
	c.t.Helper()
	c.id++
	msg := map[string]any{"id": c.id, "method": method, "params": params}
	if params == nil {
		msg["params"] = map[string]any{}
	}
	if c.session != "" {
		msg["sessionId"] = c.session
	}
	b, _ := json.Marshal(msg)
	if _, err := c.in.Write(append(b, 0)); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	for {
		line, err := c.out.ReadBytes(0)
		if err != nil {
			c.t.Fatalf("%s: chromium's answer: %v", method, err)
		}
		var resp struct {
			ID     int
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(line[:len(line)-1], &resp); err != nil {
			c.t.Fatalf("%s: %v in %q", method, err, line)
		}
		if resp.ID != c.id {
			continue
		}
		if resp.Error != nil {
			c.t.Fatalf("%s: %s", method, resp.Error.Message)
		}
		if v != nil {
			if err := json.Unmarshal(resp.Result, v); err != nil {
				c.t.Fatalf("%s: %v", method, err)
			}
		}
		return
	}
}

// eval runs a JavaScript expression in the page and decodes its value.
func (c *chrome) eval(expr string, v any) {
	c.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage
		}
		ExceptionDetails *struct{ Text string }
	}
	c.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		c.t.Fatalf("%s: %s", expr, r.ExceptionDetails.Text)
	}
	if v != nil {
		if err := json.Unmarshal(r.Result.Value, v); err != nil {
			c.t.Fatalf("%s = %s: %v", expr, r.Result.Value, err)
		}
	}
}

// waitFor polls a JavaScript condition until it is true, for at most a
// minute.
func (c *chrome) waitFor(cond string) {
	c.t.Helper()
	for start := time.Now(); ; {
		var ok bool
		c.eval("!!("+cond+")", &ok)
		if ok {
			return
		}
		if time.Since(start) > time.Minute {
			var state string
			c.eval(`location.href + "\n" + document.body.innerText`, &state)
			c.t.Fatalf("gave up waiting for %s; the page is at %s", cond, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPageInBrowser: in headless chromium at 800 px, a person sees the
// queue with the intents' exact inputs, approves one with a reason and
// rejects another; the journal records both, by the person the
// application's auth named, for the input the page showed. Nothing on the
// page is wider than the window. The screenshot is left in the test's
// directory (AGENTONCE_APPROVAL_SHOT=FILE keeps a copy).
func TestPageInBrowser(t *testing.T) {
	c := startChrome(t, 800, 1000)
	s := openJournal(t)
	refund := ask(t, s, "s-1", "refund", `{"amount":900,"customer":"cus_8812","memo":"`+strings.Repeat("long-unbroken-", 30)+`"}`, 1)
	wire := ask(t, s, "s-2", "wire", `{"to":"acct-9","amount":"120000.00"}`, 2)
	srv := serve(t, s)
	c.call("Network.setExtraHTTPHeaders", map[string]any{"headers": map[string]string{"X-User": "ann@example.com"}}, nil)
	c.call("Page.navigate", map[string]any{"url": srv.URL + "/approvals/"}, nil)
	c.waitFor(`document.readyState == "complete" && document.querySelector("h1")`)

	var page struct {
		Text          string
		Sections      []string
		Scroll, Width int
	}
	c.eval(`({text: document.body.innerText, sections: [...document.querySelectorAll("section")].map(s => s.id),
		scroll: document.documentElement.scrollWidth, width: document.documentElement.clientWidth})`, &page)
	if want := []string{refund.key.String(), wire.key.String()}; fmt.Sprint(page.Sections) != fmt.Sprint(want) {
		t.Errorf("the queue lists %v; want %v, the oldest first", page.Sections, want)
	}
	for _, want := range []string{"Signed in as ann@example.com", `"customer": "cus_8812"`, `"amount": "120000.00"`, "0 of 2", refund.fp.String()} {
		if !strings.Contains(page.Text, want) {
			t.Errorf("the page does not show %q:\n%s", want, page.Text)
		}
	}
	if page.Scroll > page.Width || page.Width != 800 {
		t.Errorf("the page is %d px wide in a window of %d; want no horizontal overflow at 800", page.Scroll, page.Width)
	}
	var shot struct{ Data string }
	c.call("Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	b, _ := base64.StdEncoding.DecodeString(shot.Data)
	path := filepath.Join(t.TempDir(), "approval-800.png")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("AGENTONCE_APPROVAL_SHOT"); keep != "" {
		os.WriteFile(keep, b, 0o644)
	}
	if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() != 800 {
		t.Errorf("screenshot %s: %v; want a PNG 800 px wide", path, err)
	}

	decide := func(key, reason, button string) {
		sel := fmt.Sprintf(`document.getElementById(%q)`, key)
		c.eval(sel+`.querySelector("textarea").value = `+fmt.Sprintf("%q", reason), nil)
		c.eval(sel+`.querySelector("button[value=`+button+`]").click()`, nil)
		c.waitFor(`location.search.includes(` + fmt.Sprintf("%q", key) + `) && document.readyState == "complete" && document.querySelector(".done")`)
	}
	decide(refund.key.String(), "customer called, ticket 4411", "approve")
	decide(wire.key.String(), "not our customer's account", "reject")
	var text string
	c.eval(`document.body.innerText`, &text)
	var forms int
	c.eval(`document.querySelectorAll("form").length`, &forms)
	if !strings.Contains(text, "Your rejection of "+wire.key.String()+" is recorded.") || !strings.Contains(text, "Approved: it runs the next time its call is made") || forms != 0 {
		t.Errorf("after the decisions the page has %d forms and says:\n%s\nwant the rejection recorded, the refund approved, nothing to decide", forms, text)
	}

	r, _ := s.Get(context.Background(), refund.key)
	if g := r.Approval.Given; len(g) != 1 || g[0].By != "ann@example.com" || g[0].Reason != "customer called, ticket 4411" || g[0].Fingerprint != refund.fp {
		t.Errorf("refund's approvals = %+v; want ann@example.com's, for its input", g)
	}
	r, _ = s.Get(context.Background(), wire.key)
	if res := r.Resolution; r.State != journal.StateSuppressed || res == nil || res.By != "ann@example.com" || res.Reason != "not our customer's account" {
		t.Errorf("wire after the rejection: %s, %+v; want suppressed by ann@example.com", r.State, res)
	}
}
