module github.com/agentonce/agentonce/adapters/genkit

go 1.26.0

require (
	github.com/firebase/genkit/go v1.4.0 // indirect
	github.com/google/dotprompt/go v0.0.0-20251121213842-db5416a4f7ce // indirect
)
