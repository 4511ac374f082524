// The tool behind .ci/goget-check: it serves the repository's modules as
// a file-system module proxy and turns the README's snippets into
// programs. Not part of the workspace (CI tooling, run with GOWORK=off).
module goget

go 1.26.0

require golang.org/x/mod v0.41.0
