package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// tokenEnv names the environment variable that carries the API token for
// -add-to (a flag would show it to everyone who lists processes).
const tokenEnv = "FLEETCAM_TOKEN"

// addParallel is how many devices -add-to adds at once.
const addParallel = 8

// addToInventory adds every IMEI to the organization whose device list is
// devicesURL (…/v2/organizations/{orgId}/devices), with token. An IMEI the
// cloud already holds (409) counts as there: a second run adds nothing.
// It stops at the first other answer, whose message it returns.
func addToInventory(ctx context.Context, devicesURL, token string, imeis []string, stderr io.Writer) error {
	if token == "" {
		return fmt.Errorf("-add-to needs an API token in %s (the .data.token of POST /v2/authenticate)", tokenEnv)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := &http.Client{Timeout: 30 * time.Second}
	var (
		added, there atomic.Int64
		once         sync.Once
		failure      error
		next         = make(chan string)
		wg           sync.WaitGroup
	)
	fail := func(err error) {
		once.Do(func() { failure = err; cancel() })
	}
	for range addParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for imei := range next {
				status, err := addDevice(ctx, client, devicesURL, token, imei)
				switch {
				case err != nil:
					fail(err)
				case status == http.StatusConflict:
					there.Add(1)
				default:
					added.Add(1)
				}
			}
		}()
	}
feed:
	for _, imei := range imeis {
		select {
		case next <- imei:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if failure != nil {
		return failure
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "devicesim: added %d device(s) to %s, %d already registered\n", added.Load(), devicesURL, there.Load())
	return nil
}

// addDevice posts one device and answers the status: 200 or 409, or an
// error that carries the API's message.
func addDevice(ctx context.Context, client *http.Client, devicesURL, token, imei string) (int, error) {
	body, _ := json.Marshal(map[string]string{"imei": imei, "name": "Simulated " + imei})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, devicesURL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("-add-to %q: %w", devicesURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("-add-to: %w", err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode == http.StatusOK || res.StatusCode == http.StatusConflict {
		return res.StatusCode, nil
	}
	var e struct{ Message string }
	if json.Unmarshal(answer, &e) != nil || e.Message == "" {
		e.Message = strings.TrimSpace(string(answer))
	}
	return 0, fmt.Errorf("-add-to: adding %s: %d %s", imei, res.StatusCode, e.Message)
}
