module github.com/agentonce/agentonce/cmd/agentcheck/redis

go 1.26.0

require (
	github.com/agentonce/agentonce v0.1.0
	github.com/agentonce/agentonce/journal/redis v0.1.0
	github.com/redis/go-redis/v9 v9.23.0
)
