package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/compare"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/record"
	"github.com/schedlens/schedlens/internal/report"
)

// The OpenAPI document lists exactly the routes the router serves, method by method.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	h := apitest.Handler(t, nil)
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatalf("api.New returned %T, not a chi router", h)
	}
	var served []string
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method == "GET" || method == "PUT" || method == "POST" || method == "DELETE" || method == "PATCH" {
			served = append(served, strings.ToLower(method)+" "+route)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("/openapi.json: %v, version %q", err, doc.OpenAPI)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, method+" "+path)
		}
	}
	// Routes mounted for every method (the ops endpoints) are documented as GET.
	methods := map[string]int{}
	for _, r := range served {
		methods[strings.SplitN(r, " ", 2)[1]]++
	}
	served = slices.DeleteFunc(served, func(r string) bool {
		m, path, _ := strings.Cut(r, " ")
		return methods[path] == 5 && m != "get"
	})
	slices.Sort(served)
	served = slices.Compact(served)
	slices.Sort(documented)
	if diff := cmp.Diff(served, documented); diff != "" {
		t.Errorf("routes (-served +documented):\n%s", diff)
	}
}

// The verdicts, roles and variance sources the OpenAPI document lists are exactly the ones the
// comparison produces.
func TestOpenAPIComparisonEnums(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Enum []string `json:"enum"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Components.Schemas
	for _, c := range []struct {
		schema, field string
		want          []string
	}{
		{"ArmResult", "verdict", []string{compare.Improvement, compare.Regression, compare.TradeOff, compare.NoEffect, compare.InconclusiveArm, compare.InsufficientData}},
		{"MetricResult", "verdict", []string{compare.Better, compare.Worse, compare.Equivalent, compare.Inconclusive, compare.Insufficient}},
		{"MetricResult", "role", []string{compare.RolePrimary, compare.RoleGuardrail, compare.RoleSecondary}},
		{"MetricResult", "variance_from", []string{compare.FromRuns, compare.FromPods, compare.Exact}},
	} {
		got := s[c.schema].Properties[c.field].Enum
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s.%s enum (-compare +openapi):\n%s", c.schema, c.field, diff)
		}
	}
}

// The Experiment, Definition, Record and Against schemas name every JSON key the api writes for them
// (report.ExperimentInfo, events.Experiment, record.Record, record.Against).
func TestOpenAPIExperimentKeys(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	for schema, v := range map[string]any{"Experiment": report.ExperimentInfo{}, "Definition": events.Experiment{}, "Record": record.Record{}, "Against": record.Against{}} {
		var want, got []string
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				want = append(want, name)
			}
		}
		for key := range doc.Components.Schemas[schema].Properties {
			got = append(got, key)
		}
		slices.Sort(want)
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s schema keys (-Go +openapi):\n%s", schema, diff)
		}
	}
}
