package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader is the header that signs a notice's body.
const SignatureHeader = "Agentonce-Signature"

// DefaultMaxAge is how old a signature Verify accepts when maxAge is zero.
const DefaultMaxAge = 5 * time.Minute

// sign is the SignatureHeader value for body sent at t.
func sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts + "."))
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks that header, a request's SignatureHeader, signs body with
// secret and is at most maxAge old (or ahead of the clock); zero means
// DefaultMaxAge. A receiver calls it on the raw body before it decodes
// it. Its error wraps ErrSignature and says what was wrong.
func Verify(secret []byte, header string, body []byte, maxAge time.Duration) error {
	var ts string
	var sums [][]byte
	for f := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(f), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sums = append(sums, b)
			}
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sums) == 0 {
		return fmt.Errorf("%w: %s %q is not \"t=<unix seconds>,v1=<hex>\"", ErrSignature, SignatureHeader, header)
	}
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	if age := time.Since(time.Unix(sec, 0)); age > maxAge || age < -maxAge {
		return fmt.Errorf("%w: signed %v ago, more than %v", ErrSignature, age.Round(time.Second), maxAge)
	}
	want := mac(secret, ts, body)
	for _, s := range sums {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return fmt.Errorf("%w: the body does not match its signature", ErrSignature)
}
