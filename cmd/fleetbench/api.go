package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// apiClient calls the benchmarked fleetcam's /v2 API as the bench partner.
type apiClient struct {
	base  string
	token string
	http  *http.Client
}

func newAPIClient(ctx context.Context, srv *server) (*apiClient, error) {
	c := &apiClient{base: "http://" + srv.http, http: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64},
	}}
	var out struct {
		Data struct {
			Token string `json:"token"`
		} `json:"data"`
	}
	status, err := c.call(ctx, http.MethodPost, "/v2/authenticate", map[string]string{"email": benchEmail, "password": benchPassword}, &out)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK || out.Data.Token == "" {
		return nil, fmt.Errorf("POST /v2/authenticate answered %d", status)
	}
	c.token = out.Data.Token
	return c, nil
}

// call sends body as JSON and decodes the answer into out (when not nil).
func (c *apiClient) call(ctx context.Context, method, path string, body, out any) (int, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}
