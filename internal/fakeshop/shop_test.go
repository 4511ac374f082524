package fakeshop_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentonce/agentonce/internal/fakeshop"
)

// post sends body to the shop's path with key under header ("" for none)
// and returns the status.
func post(t *testing.T, shop *fakeshop.Shop, path, header, key, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, shop.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if header != "" {
		req.Header.Set(header, key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The shop makes every valid effect it is asked for, a repeated key
// included, and counts the repeats as duplicates; it refuses an invalid
// request and makes nothing.
func TestShop(t *testing.T) {
	shop := fakeshop.NewShop()
	defer shop.Close()
	for _, r := range []struct {
		path, header, key, body string
		want                    int
	}{
		{"/charges", "Idempotency-Key", "k1", `{"amount":4900,"currency":"usd"}`, http.StatusOK},
		{"/charges", "Idempotency-Key", "k1", `{"amount":4900,"currency":"usd"}`, http.StatusOK},
		{"/charges", "Idempotency-Key", "k2", `{"amount":0,"currency":"usd"}`, http.StatusBadRequest},
		{"/charges", "Idempotency-Key", "k3", `not json`, http.StatusBadRequest},
		{"/emails", "X-Agentonce-Key", "k4", `{"to":"a@example.com"}`, http.StatusOK},
		{"/emails", "X-Agentonce-Key", "k5", `{}`, http.StatusBadRequest},
	} {
		if got := post(t, shop, r.path, r.header, r.key, r.body); got != r.want {
			t.Errorf("POST %s %s (%s: %s) = %d; want %d", r.path, r.body, r.header, r.key, got, r.want)
		}
	}
	charges, emails := shop.Charges(), shop.Emails()
	if len(charges) != 2 || charges[0].ID != "ch_1" || charges[1].ID != "ch_2" || charges[1].Key != "k1" || charges[1].Amount != 4900 {
		t.Errorf("Charges() = %+v; want ch_1 and ch_2 of 4900 under k1", charges)
	}
	if len(emails) != 1 || emails[0].ID != "em_1" || emails[0].Key != "k4" || emails[0].To != "a@example.com" {
		t.Errorf("Emails() = %+v; want em_1 to a@example.com under k4", emails)
	}
	if got := shop.Duplicates(); got != 1 {
		t.Errorf("Duplicates() = %d; want 1", got)
	}
}
