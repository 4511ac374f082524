package main

import (
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// minBarPx is the narrowest an attempt's bar may be drawn, in pixels.
const minBarPx = 6

// measureScript runs in a copy of a page under test, after the page's
// own script: it writes what chromium laid out (every grid row's cells
// with the box their text really takes, every attempt's bar, the texts a
// reader sees) as JSON into a <pre id="measured">, which --dump-dom
// prints.
const measureScript = `<script>
(function(){
function box(r){return {l:r.left,r:r.right,t:r.top,b:r.bottom};}
function ink(el){
  var r=el.getBoundingClientRect(), b=box(r);
  if(getComputedStyle(el).overflowX==="hidden"||el.tagName.toLowerCase()==="svg"){return b;}
  var g=document.createRange(); g.selectNodeContents(el);
  var t=g.getBoundingClientRect();
  if(t.width>0){b.l=Math.min(b.l,t.left);b.r=Math.max(b.r,t.right);}
  return b;
}
var out={width:window.innerWidth,rows:[],bars:[],intro:"",labels:[]};
document.querySelectorAll(".grid").forEach(function(g){
  var cells=[];
  Array.prototype.forEach.call(g.children,function(c){
    var r=c.getBoundingClientRect();
    if(r.width===0&&r.height===0){return;}
    cells.push({text:c.textContent.trim().slice(0,40),ink:ink(c)});
  });
  out.rows.push(cells);
});
document.querySelectorAll("rect.attempt").forEach(function(e){
  e.scrollIntoView({block:"center"});
  var r=e.getBoundingClientRect(), w=Math.min(r.width,12);
  var x=r.left+w-2, y=(r.top+r.bottom)/2;
  var top=document.elementsFromPoint(x,y).find(function(h){return h.matches("rect.attempt, text.mark");});
  out.bars.push({id:e.dataset.id,box:box(r),title:e.querySelector("title").textContent,onTop:top===e});
});
out.intro=document.querySelector(".head p.muted").innerText;
out.colh=Array.prototype.map.call(document.querySelectorAll(".axis .colh"),function(e){return e.innerText;});
document.querySelectorAll("summary .next").forEach(function(e){out.labels.push(e.innerText);});
var pre=document.createElement("pre"); pre.id="measured"; pre.textContent=JSON.stringify(out);
document.body.appendChild(pre);
})();
</script>
`

// measured is what measureScript reports.
type measured struct {
	Width int `json:"width"`
	Rows  [][]struct {
		Text string `json:"text"`
		Ink  pxBox  `json:"ink"`
	} `json:"rows"`
	Bars []struct {
		ID    string `json:"id"`
		Box   pxBox  `json:"box"`
		Title string `json:"title"`
		OnTop bool   `json:"onTop"`
	} `json:"bars"`
	Intro  string   `json:"intro"`
	Colh   []string `json:"colh"`
	Labels []string `json:"labels"`
}

type pxBox struct{ L, R, T, B float64 }

// measurePage loads page at width px in chromium with measureScript
// added, and returns what it measured.
func measurePage(t *testing.T, chromium string, proxy *countingProxy, page string, width int) measured {
	t.Helper()
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	probe := strings.TrimSuffix(page, ".html") + fmt.Sprintf("-measure-%d.html", width)
	src := strings.Replace(string(b), "</body>", measureScript+"</body>", 1)
	if err := os.WriteFile(probe, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(browser(t, chromium, proxy, probe, "--dump-dom", fmt.Sprintf("--window-size=%d,900", width), "--hide-scrollbars"))
	_, rest, ok := strings.Cut(dom, `<pre id="measured">`)
	js, _, ok2 := strings.Cut(rest, "</pre>")
	if !ok || !ok2 {
		t.Fatalf("%s at %d px: the measuring script wrote nothing", page, width)
	}
	var m measured
	if err := json.Unmarshal([]byte(html.UnescapeString(js)), &m); err != nil {
		t.Fatalf("%s at %d px: %v\n%s", page, width, err, js)
	}
	if m.Width != width {
		t.Fatalf("%s: the window is %d px wide; want %d", page, m.Width, width)
	}
	return m
}

// TestTimelineLayoutInBrowser lays the pages of two sessions out in
// headless chromium at 800 and 1400 px and checks, from the boxes
// chromium computed, what a reader sees: no cell's text (column headers
// included) runs into the next cell's; every attempt's bar is at least
// minBarPx wide, on top of its neighbours, and its hover text says how
// long the attempt really took; the words under the title and in the last
// column say what they mean.
func TestTimelineLayoutInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	proxy := newCountingProxy(t)
	path := buildTimelineJournal(t)
	dir := t.TempDir()
	for _, session := range []string{"quick", "demo"} {
		page := filepath.Join(dir, session+".html")
		if r := timelineAt(t, false, "--journal", path, "--session", session, "--html", page); r.code != 0 {
			t.Fatalf("timeline --session %s --html = %d, %s", session, r.code, r.stderr)
		}
		for _, w := range []int{800, 1400} {
			m := measurePage(t, chromium, proxy, page, w)
			where := fmt.Sprintf("%s at %d px", session, w)
			checkCells(t, where, &m)
			checkBars(t, where, &m)
			checkWords(t, where, &m)
		}
	}
}

// checkCells fails when a cell's text runs into the next cell's, or past
// the window.
func checkCells(t *testing.T, where string, m *measured) {
	t.Helper()
	for i, row := range m.Rows {
		for j := 1; j < len(row); j++ {
			a, b := row[j-1], row[j]
			if a.Ink.R > b.Ink.L+0.5 {
				t.Errorf("%s, row %d: %q ends at %.1f px, past the start of %q at %.1f px", where, i, a.Text, a.Ink.R, b.Text, b.Ink.L)
			}
		}
		if n := len(row); n > 0 && row[n-1].Ink.R > float64(m.Width)+0.5 {
			t.Errorf("%s, row %d: %q ends at %.1f px, past the window's %d px", where, i, row[n-1].Text, row[n-1].Ink.R, m.Width)
		}
	}
}

// checkBars fails when a bar is too narrow to see, lies under another, or
// its hover text does not give its real duration.
func checkBars(t *testing.T, where string, m *measured) {
	t.Helper()
	for _, b := range m.Bars {
		if w := b.Box.R - b.Box.L; w < minBarPx-0.01 {
			t.Errorf("%s: attempt %s is drawn %.2f px wide; want at least %d px (hover: %q)", where, b.ID, w, minBarPx, b.Title)
		}
		if !b.OnTop {
			t.Errorf("%s: attempt %s lies under another attempt's bar or a mark", where, b.ID)
		}
	}
	// The 2 ms attempts of the quick session say so.
	if !strings.HasPrefix(where, "quick") {
		return
	}
	titles := map[string]string{}
	for _, b := range m.Bars {
		titles[b.ID] = b.Title
	}
	for _, id := range []string{"att-17-1", "att-18-1"} {
		if got := titles[id]; !strings.Contains(got, "took 2ms") {
			t.Errorf("%s: attempt %s's hover text is %q; want its real duration, took 2ms", where, id, got)
		}
	}
}

// checkWords fails when the explanation under the title or the last
// column speak of replays as if a row had been replayed.
func checkWords(t *testing.T, where string, m *measured) {
	t.Helper()
	const why = "A call the journal answered without running the tool, or one that joined an identical call already running, is not recorded, so it is not drawn."
	if !strings.Contains(m.Intro, why) {
		t.Errorf("%s: the text under the title is %q; want it to say %q", where, m.Intro, why)
	}
	if last := m.Colh[len(m.Colh)-1]; last != "if called again" {
		t.Errorf("%s: the last column's header is %q; want %q", where, last, "if called again")
	}
	for i, l := range m.Labels {
		if strings.Contains(l, "replay") {
			t.Errorf("%s, row %d: the last column says %q; a row was not replayed", where, i+1, l)
		}
	}
}
