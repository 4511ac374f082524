package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
)

// walShare is the WAL of one database between two positions, read with
// pg_waldump from the server's pg_wal directory: the records of its
// relations, and every record of the transactions that wrote them (their
// commits). On a server other programs write to as well, it is the
// segment's own WAL, where pg_stat_wal and the LSN count everyone's.
type walShare struct {
	bytes, records, fpi, commits int64
}

var (
	walLine   = regexp.MustCompile(`len \(rec/tot\):\s*\d+/\s*(\d+), tx:\s*(\d+),`)
	walRel    = regexp.MustCompile(`rel \d+/(\d+)/\d+`)
	walCommit = regexp.MustCompile(`desc: COMMIT`)
	walFPW    = regexp.MustCompile(`FPW`)
)

// dumpShare runs pg_waldump (bin) over dir from start to end and returns
// the share of the database whose OID is db.
func dumpShare(ctx context.Context, bin, dir string, db uint32, start, end string) (walShare, error) {
	if start == end {
		return walShare{}, nil
	}
	out, err := exec.CommandContext(ctx, bin, "-p", dir, "-s", start, "-e", end).Output()
	if err != nil && len(out) == 0 {
		return walShare{}, fmt.Errorf("pg_waldump -p %s -s %s -e %s: %w", dir, start, end, err)
	}
	type rec struct {
		tot    int64
		tx     string
		ours   bool
		commit bool
		fpw    int64
	}
	var recs []rec
	txs := map[string]bool{}
	want := strconv.FormatUint(uint64(db), 10)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		m := walLine.FindSubmatch(line)
		if m == nil {
			continue
		}
		tot, _ := strconv.ParseInt(string(m[1]), 10, 64)
		r := rec{tot: tot, tx: string(m[2]), commit: walCommit.Match(line),
			fpw: int64(len(walFPW.FindAllIndex(line, -1)))}
		for _, rm := range walRel.FindAllSubmatch(line, -1) {
			if string(rm[1]) == want {
				r.ours = true
			}
		}
		if r.ours && r.tx != "0" {
			txs[r.tx] = true
		}
		recs = append(recs, r)
	}
	var s walShare
	for _, r := range recs {
		if !r.ours && !(r.tx != "0" && txs[r.tx]) {
			continue
		}
		s.bytes += r.tot
		s.records++
		s.fpi += r.fpw
		if r.commit {
			s.commits++
		}
	}
	return s, nil
}
