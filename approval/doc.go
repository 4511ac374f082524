// Package approval serves the page on which people approve or reject the
// intents awaiting approval (journal.StateAwaiting): an http.Handler that
// an application mounts behind its own authentication.
//
// An approval posts the fingerprint of the input the page showed, so a
// page shown for one input can never approve another; the journal records
// the approver Options.Approver names, when and why. The handler never
// runs an intent: it runs when its call is next made.
//
// # Caveats
//
//   - Who may decide is the application's to say (Options.Approver).
//   - Cross-site POSTs are refused (http.CrossOriginProtection), and so is
//     a POST without Origin or Sec-Fetch-Site: the page is for browsers.
//   - The page shows the tools' inputs: serve it over TLS.
//
// docs/approval.md is the long form.
package approval
