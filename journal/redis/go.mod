module github.com/agentonce/agentonce/journal/redis

go 1.26.0

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

require (
	github.com/agentonce/agentonce v0.1.0
	github.com/google/uuid v1.6.0
	github.com/redis/go-redis/v9 v9.23.0
)

