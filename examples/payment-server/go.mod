module github.com/agentonce/agentonce/examples/payment-server

go 1.26.0

require github.com/agentonce/agentonce v0.0.0

require github.com/stripe/stripe-go/v82 v82.5.1 // indirect

replace github.com/agentonce/agentonce => ../..
