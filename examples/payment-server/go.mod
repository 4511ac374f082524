module github.com/agentonce/agentonce/examples/payment-server

go 1.26.0

require (
	github.com/agentonce/agentonce v0.0.0
	github.com/agentonce/agentonce/journal/redis v0.0.0-00010101000000-000000000000
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/stripe/stripe-go/v82 v82.5.1
	go.etcd.io/bbolt v1.5.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

replace github.com/agentonce/agentonce => ../..

replace github.com/agentonce/agentonce/journal/redis => ../../journal/redis
