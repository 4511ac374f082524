module github.com/agentonce/agentonce/adapters/openai

go 1.26.0

require (
	github.com/agentonce/agentonce v0.1.0
	github.com/google/jsonschema-go v0.4.3
	github.com/openai/openai-go/v3 v3.99.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/coder/websocket v1.8.15 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
