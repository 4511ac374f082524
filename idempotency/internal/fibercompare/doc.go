// Package fibercompare sets the idempotency middleware beside the most
// used published Go one, Fiber's (gofiber/fiber/v3 middleware/idempotency,
// on Redis through gofiber/storage/redis/v3), on the same Redis server:
// benchmark pairs one request at a time and with 16 clients, each
// reporting the Redis round trips and writes it sent per request, a
// replay's cost on the server alone (BenchmarkServerReplay, each Fiber
// app's handler called in process), and a test of what each does with a
// reused key. It is a module of its own so
// that the core module does not depend on Fiber; it has only tests.
package fibercompare
