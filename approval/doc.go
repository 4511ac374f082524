// Package approval serves the page on which people approve or reject the
// intents awaiting approval: an http.Handler that an application mounts
// behind its own authentication. An approval names the fingerprint of the
// input the page showed; the intent runs when its call is next made.
//
// # Caveats
//
//   - Who may decide is the application's to say (Options.Approver).
//   - Cross-site POSTs, and POSTs without Origin or Sec-Fetch-Site, are
//     refused.
//   - The page shows the tools' inputs: serve it over TLS.
//
// docs/approval.md is the long form.
package approval
