package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/schedlens/schedlens/internal/events"
)

// lookupChunk is the most ids one POST /v1/requests/lookup takes.
const lookupChunk = 1000

// State is what became of one stored result, as POST /v1/requests/lookup answers.
type State struct {
	ID         string         `json:"id"`
	Cluster    string         `json:"cluster"`
	Source     string         `json:"source"`
	OccurredAt time.Time      `json:"occurred_at"`
	Pod        *events.PodRef `json:"pod"`
	Waiting    *Wait          `json:"waiting"`
}

// Wait is why a stored result waits for a pod.
type Wait struct {
	IP             string     `json:"ip"`
	IPSeenFrom     *time.Time `json:"ip_seen_from"`
	ClustersWithIP []string   `json:"clusters_with_ip"`
	Reason         string     `json:"reason"`
}

// Client reads results back through the schedlens API.
type Client struct {
	BaseURL string       // e.g. http://127.0.0.1:8080
	HTTP    *http.Client // http.DefaultClient when nil
	// Token, when set, is sent as `Authorization: Bearer` (an api with authentication: role read).
	Token string
}

// Lookup returns the stored results among ids, any number of them (they are asked for a
// thousand at a time); ids not stored are absent.
func (c *Client) Lookup(ctx context.Context, ids []string) ([]State, error) {
	var out []State
	for start := 0; start < len(ids); start += lookupChunk {
		states, err := c.lookup(ctx, ids[start:min(start+lookupChunk, len(ids))])
		if err != nil {
			return nil, err
		}
		out = append(out, states...)
	}
	return out, nil
}

func (c *Client) lookup(ctx context.Context, ids []string) ([]State, error) {
	body, err := json.Marshal(map[string][]string{"ids": ids})
	if err != nil {
		return nil, err
	}
	url := strings.TrimSuffix(c.BaseURL, "/") + "/v1/requests/lookup"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("read back through the api: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read back through the api: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("read back through the api: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var p struct{ Title, Detail string }
		_ = json.Unmarshal(b, &p)
		return nil, fmt.Errorf("read back through the api: POST %s: %s: %s %s", url, resp.Status, p.Title, p.Detail)
	}
	var r struct {
		Requests []State `json:"requests"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read back through the api: POST %s: %w", url, err)
	}
	return r.Requests, nil
}
