package mcp

import "errors"

// ErrNoIdentity is returned by HTTPHandler, and its text answered to a
// call that arrived over HTTP, when the Options have no Identity and do not
// say TrustClientScope: on a network listener the tenant and principal must
// come from authentication, not from what a client writes in _meta.
var ErrNoIdentity = errors.New("agentonce mcp: a network listener needs Options.Identity (the tenant and principal from authentication) or Options.TrustClientScope")
