module github.com/agentonce/agentonce/internal/powerloss

go 1.26.0

require golang.org/x/sys v0.50.0

require github.com/hanwen/go-fuse/v2 v2.12.1

require go.etcd.io/bbolt v1.5.0

replace github.com/agentonce/agentonce => ../..
