module github.com/agentonce/agentonce/cmd/agentctl

go 1.26.0

require (
	github.com/agentonce/agentonce v0.1.0
	github.com/agentonce/agentonce/journal/redis v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/google/uuid v1.6.0
	github.com/jackc/pgx/v5 v5.12.0
	go.etcd.io/bbolt v1.5.0
	golang.org/x/sync v0.25.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)


require (
	github.com/spf13/cobra v1.10.2
	github.com/spf13/pflag v1.0.10
)
