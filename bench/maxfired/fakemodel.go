package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
)

// fakeModel is a model API on loopback, for the SDKs whose client calls
// one: it answers a request whose body holds no tool result with reply
// (a call of the charge tool) and one that holds one with done.
type fakeModel struct {
	srv *http.Server
	url string
}

// startFakeModel serves reply and done as JSON at path; marker is what a
// request body holds once it carries a tool result.
func startFakeModel(path, marker string, reply, done func() []byte) (*fakeModel, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &fakeModel{url: "http://" + ln.Addr().String()}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if bytes.Contains(body, []byte(marker)) {
			w.Write(done())
			return
		}
		w.Write(reply())
	})
	m.srv = &http.Server{Handler: mux}
	go m.srv.Serve(ln)
	return m, nil
}

func (m *fakeModel) close() { m.srv.Close() }
