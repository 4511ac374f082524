// Command goget is the tool behind .ci/goget-check.
//
//	goget proxy -src DIR -version vX.Y.Z -time RFC3339 -out PROXY
//
// serves every module under DIR (a clean export of a commit) at version
// as a GOPROXY=file:// directory would: <escaped path>/@v/list, .info,
// .mod and .zip, the zip made by golang.org/x/mod/zip as the go command
// makes it from a tagged commit (nested modules left out). Modules under
// an internal/ directory are not served.
//
//	goget snippets -readme README.md -templates DIR -out DIR
//
// writes, for every README code block that follows a line
// "<!-- snippet: NAME -->", DIR/NAME/main.go: the template NAME.go.tmpl
// with its line "//SNIPPET" replaced by the block. A diff block gives its
// new side: lines starting with "-" are dropped, the first column of the
// rest removed.
//
//	goget programs -readme README.md -out DIR
//
// writes, for the Nth ```go block that follows a line
// "<!-- program: PATH -->", DIR/N/main.go: the block, a whole program.
// It prints a line "N LINE" per block, LINE the block's first line in the
// README; none when the README has no such block.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	if len(os.Args) < 2 {
		fail(errors.New("usage: goget proxy|snippets|programs [flags]"))
	}
	var err error
	switch os.Args[1] {
	case "proxy":
		err = proxyCmd(os.Args[2:])
	case "snippets":
		err = snippetsCmd(os.Args[2:])
	case "programs":
		err = programsCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (want proxy, snippets or programs)", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "goget:", err)
	os.Exit(1)
}

func proxyCmd(args []string) error {
	fl := flag.NewFlagSet("proxy", flag.ExitOnError)
	src := fl.String("src", "", "directory holding the repository at the commit")
	version := fl.String("version", "", "version to serve every module at")
	when := fl.String("time", "", "the commit's time, RFC 3339")
	out := fl.String("out", "", "proxy directory to write")
	fl.Parse(args)
	if *src == "" || *out == "" || !semverOK(*version) {
		return fmt.Errorf("proxy needs -src, -out and a -version like v0.1.0 (got %q)", *version)
	}
	t, err := time.Parse(time.RFC3339, *when)
	if err != nil {
		return fmt.Errorf("-time: %w", err)
	}
	mods, err := findModules(*src)
	if err != nil {
		return err
	}
	for _, dir := range mods {
		path, err := serve(dir, *version, t, *out)
		if err != nil {
			return fmt.Errorf("module in %s: %w", dir, err)
		}
		fmt.Println(path, *version)
	}
	return nil
}

var semver = regexp.MustCompile(`^v\d+\.\d+\.\d+$`)

func semverOK(v string) bool { return semver.MatchString(v) }

// findModules returns the directories under root holding a go.mod, but
// not those under an internal/, testdata or dot directory.
func findModules(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root {
			n := d.Name()
			if n == "internal" || n == "testdata" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_") {
				return filepath.SkipDir
			}
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	return dirs, err
}

// serve writes the module in dir at version to the proxy directory out.
func serve(dir, version string, t time.Time, out string) (string, error) {
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	path := modfile.ModulePath(gomod)
	if path == "" {
		return "", errors.New("go.mod has no module line")
	}
	esc, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	var z bytes.Buffer
	if err := zip.CreateFromDir(&z, module.Version{Path: path, Version: version}, dir); err != nil {
		return "", err
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, t.UTC()})
	for name, b := range map[string][]byte{
		version + ".mod":  gomod,
		version + ".zip":  z.Bytes(),
		version + ".info": info,
		"list":            []byte(version + "\n"),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), b, 0o644); err != nil {
			return "", err
		}
	}
	return path, nil
}

func snippetsCmd(args []string) error {
	fl := flag.NewFlagSet("snippets", flag.ExitOnError)
	readme := fl.String("readme", "README.md", "the README to read")
	templates := fl.String("templates", "", "directory of NAME.go.tmpl files")
	out := fl.String("out", "", "directory to write NAME/main.go into")
	fl.Parse(args)
	f, err := os.Open(*readme)
	if err != nil {
		return err
	}
	defer f.Close()
	snippets, err := readBlocks(f, marker)
	if err != nil {
		return fmt.Errorf("%s: %w", *readme, err)
	}
	if len(snippets) == 0 {
		return fmt.Errorf("%s: no <!-- snippet: NAME --> block", *readme)
	}
	for _, s := range snippets {
		tmpl, err := os.ReadFile(filepath.Join(*templates, s.name+".go.tmpl"))
		if err != nil {
			return fmt.Errorf("snippet %q: %w", s.name, err)
		}
		if !bytes.Contains(tmpl, []byte("//SNIPPET\n")) {
			return fmt.Errorf("snippet %q: its template has no //SNIPPET line", s.name)
		}
		src := bytes.Replace(tmpl, []byte("//SNIPPET\n"), []byte(s.code), 1)
		dir := filepath.Join(*out, s.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), src, 0o644); err != nil {
			return err
		}
		fmt.Println(s.name)
	}
	return nil
}

func programsCmd(args []string) error {
	fl := flag.NewFlagSet("programs", flag.ExitOnError)
	readme := fl.String("readme", "README.md", "the README to read")
	out := fl.String("out", "", "directory to write N/main.go into")
	fl.Parse(args)
	f, err := os.Open(*readme)
	if err != nil {
		return err
	}
	defer f.Close()
	programs, err := readBlocks(f, programMarker)
	if err != nil {
		return fmt.Errorf("%s: %w", *readme, err)
	}
	for _, p := range programs {
		if p.lang != "go" {
			return fmt.Errorf("%s:%d: the program %q is a ```%s block; want ```go", *readme, p.line, p.name, p.lang)
		}
	}
	for i, p := range programs {
		dir := filepath.Join(*out, fmt.Sprint(i+1))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(p.code), 0o644); err != nil {
			return err
		}
		fmt.Println(i+1, p.line)
	}
	return nil
}

// snippet is a marked code block: the marker's name, the block's
// language, its first line in the README and its code.
type snippet struct {
	name, lang string
	line       int
	code       string
}

var (
	marker        = regexp.MustCompile(`^<!-- snippet: ([a-z0-9-]+) -->$`)
	programMarker = regexp.MustCompile(`^<!-- program: ([A-Za-z0-9/._-]+) -->$`)
)

// readBlocks returns the fenced code block after each line that marker
// matches.
func readBlocks(f *os.File, marker *regexp.Regexp) ([]snippet, error) {
	var out []snippet
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		m := marker.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), "```") {
			return nil, fmt.Errorf("line %d: %q is not followed by a fenced code block", line, m[0])
		}
		line++
		start := line + 1
		lang := strings.TrimPrefix(sc.Text(), "```")
		diff := lang == "diff"
		var b strings.Builder
		closed := false
		for sc.Scan() {
			line++
			l := sc.Text()
			if l == "```" {
				closed = true
				break
			}
			if diff {
				if strings.HasPrefix(l, "-") {
					continue
				}
				if l != "" {
					l = l[1:]
				}
			}
			b.WriteString(l + "\n")
		}
		if !closed {
			return nil, fmt.Errorf("line %d: the code block after %q does not end", start, m[0])
		}
		out = append(out, snippet{m[1], lang, start, b.String()})
	}
	return out, sc.Err()
}
