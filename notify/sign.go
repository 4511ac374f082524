package notify

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader signs a notice's body: "t=<unix seconds>,v1=<hex>", the
// hex being HMAC-SHA256 with the secret over t, ".", and the body.
const SignatureHeader = "Agentonce-Signature"

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

// Verify checks that header, a request's SignatureHeader, signs the raw
// body with secret and is at most maxAge old (zero means 5 minutes). Its
// error wraps ErrSignature.
func Verify(secret []byte, header string, body []byte, maxAge time.Duration) error {
	ts, sum, _ := strings.Cut(strings.TrimPrefix(header, "t="), ",v1=")
	sec, err := strconv.ParseInt(ts, 10, 64)
	got, herr := hex.DecodeString(sum)
	if err != nil || herr != nil || len(got) == 0 {
		return fmt.Errorf("%w: %s %.80q is not \"t=<unix seconds>,v1=<hex>\"", ErrSignature, SignatureHeader, header)
	}
	maxAge = cmp.Or(max(maxAge, 0), 5*time.Minute)
	if age := time.Since(time.Unix(sec, 0)); age > maxAge || age < -maxAge {
		return fmt.Errorf("%w: signed %v ago, more than %v", ErrSignature, age.Round(time.Second), maxAge)
	}
	if !hmac.Equal(got, mac(secret, ts, body)) {
		return fmt.Errorf("%w: the body does not match its signature", ErrSignature)
	}
	return nil
}
