module github.com/agentonce/agentonce/bench/maxfired/worker

go 1.26.0

require (
	github.com/agentonce/agentonce v0.1.0
	github.com/google/uuid v1.6.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/agentonce/agentonce => ../../..
