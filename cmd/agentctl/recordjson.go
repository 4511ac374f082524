package main

import "time"

// A record's JSON form is journal.Record's own (MarshalJSON and
// UnmarshalJSON); jsonSchemaHelp documents it.

// exportHeader is the first line of an export: the format, how its lines
// are sealed, and which key sealed them. It does not carry the namespace:
// whoever holds the namespace can seal a line, so a file that carried it
// could be forged by anyone who can read it.
type exportHeader struct {
	Export int    `json:"agentonce_export"`
	Seal   string `json:"seal"`   // sealName
	KeyID  string `json:"key_id"` // sealKey.id of the namespace
}

// exportFormat 3 seals every record line with an HMAC keyed by the
// namespace, and leaves the namespace out. Format 2 (a plain SHA-256 that
// anyone can recompute, and the namespace in the header) and format 1 (no
// seal) are refused: their lines cannot be told from forged ones.
const exportFormat = 3

const jsonSchemaHelp = `JSON output

Every --json output is UTF-8 JSON without HTML escaping. Times are RFC 3339
in UTC with fractional seconds as needed; a time that is not set is null.
State and effect are their names; the key is a UUID string; the fingerprint
is lower-case hex ("" when none was computed).

A record (ls --json prints one per line; show --json prints one; export and
import use one per line):

  {
    "version": 1,                      record schema version
    "key": "UUID",
    "tenant": "", "session": "", "turn": "", "tool": "", "discriminator": "",
    "fingerprint": "hex SHA-256 of the canonical input",
    "effect": "unkeyed|read-only|idempotent|keyed",
    "state": "pending|succeeded|failed|suppressed|unknown|awaiting",
    "input": JSON or null,             the canonical input, if stored
    "input_base64": "...",             only when the input is not compact JSON
    "output": JSON or null,            the tool's result (succeeded)
    "output_base64": "...",            only when the output is not compact JSON
    "error_class": "", "error_message": "",
    "attempts": [{"id": "", "start": TIME, "end": TIME|null,
                  "class": "", "error": "", "quiet_at": TIME|null}],
    "lease": {"owner": "", "token": 0, "expires": TIME|null},
    "resolution": null | {"state": "succeeded|failed|suppressed",
                  "output": JSON|null, "reason": "", "by": "", "at": TIME},
    "approval": {"need": N, "deadline": TIME,
                 "given": [{"state": "pending", "output": null, "reason": "",
                            "by": "", "at": TIME, "fingerprint": "hex"}]},
    "created": TIME, "updated": TIME, "expires": TIME
  }

"awaiting" is an intent that must be approved before it runs; "approval"
is present only on such an intent (also after it ran or was decided): the
approvers it needs, the deadline, and each approval given, with the
fingerprint of the input it approved. A rejection is the resolution with
state "suppressed", its "by" and "reason" who rejected it and why.

Export (JSON Lines): the first line is a header
  {"agentonce_export": 3, "seal": "hmac-sha256", "key_id": "hex"}
and every other line is a record with a last member "seal": the
HMAC-SHA-256 of the record's canonical JSON under a key derived from the
journal's namespace (key_id names that key). The namespace is not in the
export: import takes it from the journal, or from AGENTONCE_NAMESPACE with
--create. The export holds the tools' inputs and outputs: keep it like the
journal itself. Import rejects unknown fields, so nothing is dropped
silently.

stats --json:
  {"journal": PATH, "size_bytes": N, "records": N, "expired": N,
   "attempts": N, "attempts_per_intent": F, "oldest": TIME|null,
   "newest": TIME|null, "by_state": {"pending": N, ...},
   "by_tool": {"TOOL": N, ...}}

derive --json:
  {"namespace": "UUID", "tenant": "", "session": "", "turn": "", "tool": "",
   "discriminator": "", "key": "UUID", "fingerprint": "hex",
   "canonical": JSON, "journal_state": "STATE" or "" when no record}
  with --diff: {"a": DERIVED, "b": DERIVED, "same_key": BOOL,
   "first_difference": BYTE OFFSET or -1, "differences": [{"path": "$.x",
   "a": JSON, "b": JSON}]} where a side on which the path does not exist
   omits "a" or "b"; intent fields that differ have paths "@tenant",
   "@session", "@turn", "@tool", "@discriminator"

replay --json:
  {"session": "", "tenant": "", "at": TIME,
   "intents": [{"key": "UUID", "tenant": "", "turn": "", "tool": "",
                "state": "", "effect": "", "created": TIME,
                "action": "answer|retry|wait|block|anew", "reason": ""}],
   "summary": {"answer": N, "retry": N, "wait": N, "block": N, "anew": N}}

timeline --json:
  {"session": "", "tenant": "", "at": TIME, "from": TIME, "to": TIME,
   "intents": [{"key": "UUID", "tenant": "", "turn": "", "tool": "",
                "effect": "", "state": "", "created": TIME, "updated": TIME,
                "status": "succeeded|failed|suppressed|unknown|in-progress|awaiting",
                "attempts": [{"id": "", "start": TIME, "end": TIME|null,
                              "class": "CLASS|unknown|resolved|running|stopped",
                              "error": ""}],
                "marks": [{"kind": "wait|retry|suppress|resolve|approve|reject", "at": TIME,
                           "until": TIME|null, "text": ""}],
                "for_model": "the text the model is given",
                "reissue": "answer|retry|wait|block|anew", "reissue_reason": "",
                "attention": "unknown|blocked|approval|"}],
   "gaps": [{"from": TIME, "to": TIME}],   idle stretches cut from the axis
   "summary": {"STATUS": N, ...}}

queue --json, one intent per line, oldest first:
  {"key": "UUID", "created": TIME, "age_seconds": N, "end": "agent|server",
   "tenant": "", "session": "", "turn": "", "tool": "", "state": "",
   "needs": "resolve|reissue", "why": "",
   "commands": [{"when": "it happened: ...", "command": "agentctl ..."},
                {"when": "it did not happen", "command": "agentctl ..."}]}
  where a server's request (end "server") has its method and route as
  tool and the client's idempotency key as session; commands is null for
  "reissue" (nothing to resolve: the agent's next call settles it)

gc --json: {"dry_run": BOOL, "removed": N}

tail --json, one event per line:
  {"time": TIME, "kind": "before-write-ahead|after-write-ahead|after-effect|
   after-outcome|retry|in-flight|takeover|reconcile|settle|result",
   "tool": "", "session": "", "turn": "", "key": "UUID", "attempts": N,
   "attempt": "", "class": "", "delay_ms": N, "status": "", "source": "",
   "error": ""}  where attempt, class, delay_ms, status, source and error
   are left out when not set; status and source are set on "result"

verify --json:
  {"journal": LOCATION, "records": N,
   "damaged": [{"key": "UUID", "problem": "what is wrong"}]}
`

// optTime is t in UTC, or nil (JSON null) when it is not set.
func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
