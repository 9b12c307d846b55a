package ui_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/api"
	"github.com/schedlens/schedlens/internal/api/apitest"
	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/pgtest"
	"github.com/schedlens/schedlens/internal/ui"
)

var definitionProblem = regexp.MustCompile(`<li data-definition-problem><code>([^<]*)</code></li>`)

// The experiment page warns of the definition's problems, a short list (the rest counted);
// a definition without problems has no warning.
func TestExperimentPageListsDefinitionProblems(t *testing.T) {
	db := pgtest.DB(t)
	web, err := ui.New(db, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := apitest.Serve(t, db, api.WithUI(web))
	define := func(name, data string) {
		now := time.Now().UTC().Format(time.RFC3339Nano)
		env, err := events.Decode([]byte(`{"v":1,"id":"experiment/ai-lab/` + name + `/1","kind":"experiment","cluster":"lab","source":"collector/lab-0",
			"occurred_at":"` + now + `","observed_at":"` + now + `","experiment":{"name":"` + name + `"},"data":` + data + `}`))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := db.Append(context.Background(), []*events.Envelope{env}, nil); err != nil {
			t.Fatal(err)
		}
	}
	define("day20", `{"name":"day20","fixed":["image","model","input"],"baseline":"control","arms":["control","mps"]}`)
	define("day21", `{"name":"day21","change":"MPS","repeats":"three","fixed":{"request":{"port":70000}},"errors":["alpha: want a number in (0, 1), got \"<2>\""]}`)
	var many []string
	for i := range 10 {
		many = append(many, fmt.Sprintf(`"m%d"`, i))
	}
	define("day22", `{"name":"day22","errors":[`+strings.Join(many, ",")+`]}`)

	tests := []struct {
		experiment string
		want       []string
		more       string
	}{
		{"day20", nil, ""},
		{"day21", []string{
			`alpha: want a number in (0, 1), got "<2>"`,
			"fixed.request.port: want a port from 1 to 65535, got 70000",
			`repeats: want an integer from 0 to 2147483647, got "three"`,
		}, ""},
		{"day22", []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"}, "and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.experiment, func(t *testing.T) {
			resp, err := http.Get(srv.URL + "/ui/experiments/" + tt.experiment)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %s", resp.Status, body)
			}
			var got []string
			for _, m := range definitionProblem.FindAllStringSubmatch(string(body), -1) {
				got = append(got, html.UnescapeString(m[1]))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("definition problems on the page (-want +got):\n%s", diff)
			}
			if warned := strings.Contains(string(body), "data-definition-problems"); warned != (tt.want != nil) {
				t.Errorf("warning shown: %v, want %v", warned, tt.want != nil)
			}
			if tt.more != "" && !strings.Contains(string(body), tt.more) {
				t.Errorf("page does not say %q", tt.more)
			}
		})
	}
}
