package approval

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentonce/agentonce/journal"
)

// Options configures Handler.
type Options struct {
	// Approver names the person, signed in to the application, who makes
	// the request; an error or an empty name refuses it (403). Required.
	Approver func(*http.Request) (string, error)
	// Limit bounds the intents the page lists; zero means 200.
	Limit int
}

// Bounds of a decision's form.
const (
	maxBody   = 16 << 10
	maxReason = 2000 // bytes
)

// Handler returns the approval page over store, at the path it is mounted
// at: GET lists the intents awaiting approval, POST records one person's
// approval or rejection and redirects back.
func Handler(store journal.Store, opts *Options) http.Handler {
	if opts == nil || opts.Approver == nil {
		panic("approval: Options.Approver is required: it names who decides")
	}
	return &handler{store: store, opts: *opts}
}

type handler struct {
	store journal.Store
	opts  Options
	cop   http.CrossOriginProtection
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
	w.Header().Set("Cache-Control", "no-store") // the page holds the tools' inputs
	if r.Method == http.MethodPost {            // before the Approver: a forgery gets no further
		if err := h.cop.Check(r); err != nil || r.Header.Get("Origin") == "" && r.Header.Get("Sec-Fetch-Site") == "" {
			http.Error(w, "refused: a decision must be posted from the approval page itself, by a browser (this request is cross-site or says no origin)", http.StatusForbidden)
			return
		}
	}
	who, err := h.opts.Approver(r)
	if err == nil && who == "" {
		err = errors.New("the application named no approver")
	}
	if err != nil {
		http.Error(w, "not allowed to decide: "+err.Error(), http.StatusForbidden)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.page(w, r, who)
	case http.MethodPost:
		h.decide(w, r, who)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// decide records the decision the form posts, then redirects to the page.
func (h *handler) decide(w http.ResponseWriter, r *http.Request, who string) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		code, tooBig := http.StatusBadRequest, new(http.MaxBytesError)
		if errors.As(err, &tooBig) {
			code = http.StatusRequestEntityTooLarge
		}
		http.Error(w, "cannot read the form: "+err.Error(), code)
		return
	}
	f := r.PostForm
	key, err := uuid.Parse(f.Get("key"))
	if err != nil {
		http.Error(w, "the form names no intent (key "+strconv.Quote(f.Get("key"))+")", http.StatusBadRequest)
		return
	}
	res := journal.Resolution{By: who, Reason: f.Get("reason")}
	decision := f.Get("decision")
	switch {
	case len(res.Reason) > maxReason:
		err = fmt.Errorf("the reason is %d bytes; at most %d", len(res.Reason), maxReason)
	case decision == "approve":
		res.State = journal.StatePending
		if fp := f.Get("fingerprint"); len(fp) != 2*len(res.Fingerprint) || hexInto(res.Fingerprint[:], fp) != nil {
			err = errors.New("an approval needs the fingerprint of the input the page showed (64 hex digits)")
		}
	case decision == "reject" && strings.TrimSpace(res.Reason) == "":
		err = errors.New("a rejection needs a reason")
	case decision == "reject":
		res.State = journal.StateSuppressed
	default:
		err = fmt.Errorf("decision %q: want approve or reject", decision)
	}
	if err != nil {
		http.Error(w, "nothing was recorded: "+err.Error(), http.StatusBadRequest)
		return
	}
	if _, err := h.store.Resolve(r.Context(), key, res); err != nil {
		code, what := http.StatusInternalServerError, "the journal failed, and the decision may or may not be recorded: "
		switch {
		case errors.Is(err, journal.ErrNotFound):
			code, what = http.StatusNotFound, "refused, nothing was recorded: "
		case errors.Is(err, journal.ErrNotResolvable), errors.Is(err, journal.ErrInvalid):
			code, what = http.StatusConflict, "refused, nothing was recorded: "
		}
		http.Error(w, what+err.Error()+"\nReload the page to see where the intent stands.", code)
		return
	}
	// Relative: http.Redirect would lose a prefix http.StripPrefix took.
	w.Header().Set("Location", "?done="+decision+"&key="+key.String()+"#"+key.String())
	w.WriteHeader(http.StatusSeeOther)
}

func hexInto(dst []byte, s string) error {
	_, err := hex.Decode(dst, []byte(s))
	return err
}

// page lists the intents awaiting approval, the oldest first.
func (h *handler) page(w http.ResponseWriter, r *http.Request, who string) {
	limit := cmp.Or(h.opts.Limit, 200)
	var recs []journal.Record
	total := 0
	for rec, err := range h.store.List(r.Context(), journal.Filter{State: journal.StateAwaiting}) {
		if err != nil {
			http.Error(w, "cannot read the journal: "+err.Error(), http.StatusInternalServerError)
			return
		}
		total++
		if recs = append(recs, rec); len(recs) > limit {
			recs = recs[1:] // List is newest first: keep the oldest
		}
	}
	slices.Reverse(recs)
	data := map[string]any{"Who": who, "Items": recs, "Total": total}
	if k, err := uuid.Parse(r.URL.Query().Get("key")); err == nil {
		if d := r.URL.Query().Get("done"); d == "approve" || d == "reject" {
			data["Done"] = fmt.Sprintf("Your %s of %s is recorded.", map[string]string{"approve": "approval", "reject": "rejection"}[d], k)
		}
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pageTemplate.Execute(w, data); err != nil {
		http.Error(w, "cannot render the page: "+err.Error(), http.StatusInternalServerError)
	}
}

// pageFuncs word a record's fields for the page.
var pageFuncs = template.FuncMap{
	"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	// left is the time to the deadline, "" once it passed.
	"left": func(t time.Time) string {
		if d := time.Until(t); d > 0 {
			return "in " + d.Round(time.Second).String()
		}
		return ""
	},
	"approved": func(a *journal.Approval) bool { return len(a.Given) >= a.Need },
	// input is the canonical input, indented; "" when not stored.
	"input": func(in []byte) string {
		var b bytes.Buffer
		if in == nil || json.Indent(&b, in, "", "  ") == nil {
			return b.String()
		}
		return strconv.Quote(string(in))
	},
}

var pageTemplate = template.Must(template.New("page").Funcs(pageFuncs).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Awaiting approval ({{.Total}})</title>
<style>
body{font:15px/1.45 system-ui,sans-serif;margin:0 auto;padding:12px;max-width:980px;color:#111;background:#fafafa}
section{background:#fff;border:1px solid #ccc;border-left:6px solid #c60;border-radius:4px;padding:10px 14px;margin:14px 0}
section.expired{border-left-color:#999;color:#555}
h2{font-size:18px;margin:0 0 6px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:6px 0}
dt{color:#555}dd{margin:0}dd,pre,li{overflow-wrap:anywhere}
pre{white-space:pre-wrap;background:#f3f3f3;border:1px solid #ddd;padding:8px;margin:6px 0;max-height:60vh;overflow:auto;font-size:14px}
textarea{box-sizing:border-box;width:100%;font:inherit}
button{font:inherit;padding:6px 16px;margin:6px 8px 0 0}
.done{background:#e6f4e6;border:1px solid #7a7;padding:8px}
.approve{background:#1a7f37;color:#fff;border:0}.reject{background:#b42318;color:#fff;border:0}
</style></head><body>
<h1>Awaiting approval: {{.Total}}</h1>
<p>Signed in as <b>{{.Who}}</b>. Oldest first; an approved intent runs the next time its call is made, once.</p>
{{with .Done}}<p class="done" role="status">{{.}}</p>{{end}}
{{range .Items}}{{$left := left .Approval.Deadline}}<section id="{{.Key}}"{{if not $left}} class="expired"{{end}}>
<h2>{{.Intent.Tool}}</h2>
<dl><dt>asked by (tenant)</dt><dd>{{or .Intent.Tenant "—"}}</dd><dt>session</dt><dd>{{.Intent.Session}}</dd><dt>turn</dt><dd>{{.Intent.Turn}}</dd>
<dt>asked at</dt><dd>{{stamp .Created}}</dd><dt>deadline</dt><dd>{{stamp .Approval.Deadline}} ({{or $left "passed: it can no longer be approved"}})</dd>
<dt>approvals</dt><dd>{{len .Approval.Given}} of {{.Approval.Need}}</dd><dt>key</dt><dd>{{.Key}}</dd><dt>fingerprint</dt><dd>{{.Fingerprint}}</dd></dl>
{{with input .Input}}<pre class="input">{{.}}</pre>{{else}}<p><b>The input is not stored</b>, only its fingerprint: check it where the call was made before approving.</p>{{end}}
{{with .Approval.Given}}<ul>{{range .}}<li>approved by <b>{{.By}}</b> at {{stamp .At}}{{with .Reason}}: {{.}}{{end}}</li>{{end}}</ul>{{end}}
{{if approved .Approval}}<p><b>Approved:</b> it runs the next time its call is made, once.</p>{{else if $left}}<form method="post">
<input type="hidden" name="key" value="{{.Key}}"><input type="hidden" name="fingerprint" value="{{.Fingerprint}}">
<label>Reason (required to reject)<br><textarea name="reason" rows="2" maxlength="2000"></textarea></label><br>
<button class="approve" name="decision" value="approve">Approve this input</button><button class="reject" name="decision" value="reject">Reject</button>
</form>{{end}}
</section>{{else}}<p>Nothing awaits approval.</p>{{end}}
{{if gt .Total (len .Items)}}<p>{{len .Items}} of {{.Total}} shown, the oldest; decide these to see the rest.</p>{{end}}
</body></html>
`))
