// Package approval serves the page on which people approve or reject the
// intents that await approval (journal.StateAwaiting): an http.Handler
// that an application mounts behind its own authentication.
//
// The page lists every intent awaiting approval, oldest first, with its
// exact input, who asked (the tenant), session, turn, tool, the approvals
// given and needed, and the deadline. An approval posts the fingerprint of
// the input the page showed, so a page shown for one input can never
// approve another; the journal records the approver that Options.Approver
// names, when and why. The handler only records decisions: it never runs
// an intent, which runs when its call is next made.
//
// # Caveats
//
//   - Who may decide is the application's: Options.Approver names the
//     signed-in person, or refuses the request. Every request asks it.
//   - Cross-site POSTs are refused by http.CrossOriginProtection, and so is
//     a POST that carries neither Origin nor Sec-Fetch-Site (every browser
//     since 2020 sends one): the page is for browsers, and agentctl approve
//     is for scripts. No token is needed beside it.
//   - The page shows the inputs of the tools: serve it only over TLS, to
//     the people who may decide.
//
// docs/approval.md is the long form.
package approval
