package preflight

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// DefaultModelLoad is the model-load time assumed when schedlens has measured none (-model-load).
const DefaultModelLoad = 60 * time.Second

// ModelLoadKey names what a measured model-load time is for: an experiment's arm, or with Arm ""
// the whole experiment (its arms run the same image and model).
type ModelLoadKey struct {
	Experiment, Arm string
}

// ModelLoad is what schedlens measured: the slowest and the median model load (Running → Ready)
// over the pods that loaded.
type ModelLoad struct {
	Max, P50 time.Duration
	Pods     int
}

// ModelLoadKeys lists the experiments and arms of the workloads whose containers a liveness or
// startup probe could kill while they load a model.
func ModelLoadKeys(in *Input) []ModelLoadKey {
	var out []ModelLoadKey
	for _, w := range in.Workloads {
		exp, arm := w.Experiment()
		if exp == "" {
			continue
		}
		for _, k := range []ModelLoadKey{{exp, arm}, {exp, ""}} {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// FetchModelLoads reads the model-load times schedlens measured from its API
// (GET /v1/pods?experiment=&arm=, every page). Keys without measurements are left out.
func FetchModelLoads(ctx context.Context, client *http.Client, baseURL string, keys []ModelLoadKey) (map[ModelLoadKey]ModelLoad, error) {
	out := map[ModelLoadKey]ModelLoad{}
	if len(keys) == 0 { // still say so now when the URL is wrong
		var page struct{}
		if err := getJSON(ctx, client, strings.TrimRight(baseURL, "/")+"/v1/pods?limit=1", &page); err != nil {
			return nil, fmt.Errorf("schedlens api: %w", err)
		}
	}
	for _, k := range keys {
		var loads []float64
		cursor := ""
		for {
			q := url.Values{"experiment": {k.Experiment}, "limit": {"1000"}}
			if k.Arm != "" {
				q.Set("arm", k.Arm)
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			var page struct {
				Pods []struct {
					Durations struct {
						ModelLoad *float64 `json:"model_load"`
					} `json:"durations"`
				} `json:"pods"`
				NextCursor *string `json:"next_cursor"`
			}
			if err := getJSON(ctx, client, strings.TrimRight(baseURL, "/")+"/v1/pods?"+q.Encode(), &page); err != nil {
				return nil, fmt.Errorf("model-load times of %s: %w", k, err)
			}
			for _, p := range page.Pods {
				if d := p.Durations.ModelLoad; d != nil && *d >= 0 {
					loads = append(loads, *d)
				}
			}
			if page.NextCursor == nil || *page.NextCursor == "" {
				break
			}
			cursor = *page.NextCursor
		}
		if len(loads) == 0 {
			continue
		}
		slices.Sort(loads)
		sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
		out[k] = ModelLoad{Max: sec(loads[len(loads)-1]), P50: sec(loads[(len(loads)-1)/2]), Pods: len(loads)}
	}
	return out, nil
}

func (k ModelLoadKey) String() string {
	if k.Arm == "" {
		return "experiment " + k.Experiment
	}
	return "experiment " + k.Experiment + " arm " + k.Arm
}

func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var p struct {
			Detail string `json:"detail"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&p)
		return fmt.Errorf("GET %s: %s %s", u, resp.Status, p.Detail)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
