package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/schedlens/schedlens/internal/events"
	"github.com/schedlens/schedlens/internal/natstest"
)

// vegetaFor writes vegeta results (`vegeta encode -to json` lines) for the first three pods of
// the sample with an IP, each sent 100 ms after its pod was first seen with it, and one for an
// IP no pod held. It returns the file and the pods' UIDs.
func vegetaFor(t *testing.T, sample []*events.Envelope) (string, []string) {
	t.Helper()
	var lines, uids []string
	seen := map[string]bool{}
	for _, env := range sample {
		p, ok := env.Payload.(*events.PodStatus)
		if !ok || p.PodIP == "" || seen[env.Pod.UID] || len(uids) == 3 {
			continue
		}
		seen[env.Pod.UID] = true
		uids = append(uids, env.Pod.UID)
		lines = append(lines, vegetaLine(len(lines), env.OccurredAt.Add(100*time.Millisecond), p.PodIP))
	}
	lines = append(lines, vegetaLine(len(lines), sample[0].OccurredAt, "127.0.0.250"))
	path := filepath.Join(t.TempDir(), "results.json")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, uids
}

// streamMessages is how many messages the SCHEDLENS stream holds.
func streamMessages(t *testing.T, url string) uint64 {
	t.Helper()
	return natstest.StreamInfo(t, url).State.Msgs
}

func vegetaLine(seq int, at time.Time, ip string) string {
	return fmt.Sprintf(`{"attack":"e2e","seq":%d,"code":200,"timestamp":%q,"latency":1500000,"bytes_out":0,"bytes_in":12,"error":"","body":null,"method":"GET","url":"http://%s:8000/v1/infer","headers":null}`,
		seq, at.UTC().Format(time.RFC3339Nano), ip)
}

// The story with the real binaries: results imported without -cluster are reported
// waiting, with why, and are visible in the API; imported again with the right cluster (the
// flag after the format) they land on the pods; a third identical import stores nothing.
func TestImportReportsAttribution(t *testing.T) {
	base, _, natsURL := startPipelineNATS(t)
	bin := binaries(t)
	results, uids := vegetaFor(t, readSample(t))
	imp := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin+"/collector", append([]string{"import"}, args...)...)
		cmd.Env = append(os.Environ(), "SCHEDLENS_NATS_URL="+natsURL, "SCHEDLENS_API_URL="+base, "SCHEDLENS_CLUSTER=")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	type stats struct {
		EventsTotal  int64            `json:"events_total"`
		ByKind       map[string]int64 `json:"by_kind"`
		Unattributed int64            `json:"unattributed_requests_total"`
	}
	var before stats
	getJSON(t, base+"/v1/stats", &before)

	// 1. No -cluster: the results go to cluster "default", where no pod held their IPs.
	out, errOut, code := imp("vegeta", results)
	if code != 0 {
		t.Fatalf("import without -cluster: exit %d (waiting is not an error)\n%s%s", code, out, errOut)
	}
	t.Logf("collector import vegeta FILE:\n%s", out)
	for _, want := range []string{
		"stored: 4 new, 0 already stored",
		"attributed to pods: 0 of 4",
		`waiting for a pod: 4 — no pod of their cluster held their IP when they were sent (cluster "default", the default: no -cluster was given)`,
		`no pod of "default" was ever seen with it; a pod of "lab" held it then`,
		`127.0.0.250 in cluster "default": 1 result sent`,
		"import again with -cluster lab",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("first import's report lacks %q:\n%s", want, out)
		}
	}
	var st stats
	getJSON(t, base+"/v1/stats", &st)
	if st.Unattributed != 4 || st.ByKind["request"] != before.ByKind["request"]+4 {
		t.Errorf("stats after the first import: %+v, want 4 more requests, all 4 waiting", st)
	}
	// Visible in the API, two at a time.
	type waiting struct {
		ID, Cluster, IP, Source, Reason string
		OccurredAt                      time.Time `json:"occurred_at"`
		ClustersWithIP                  []string  `json:"clusters_with_ip"`
	}
	var all []waiting
	cursor := ""
	for range 5 {
		var page struct {
			Requests []waiting `json:"unattributed_requests"`
			Next     *string   `json:"next_cursor"`
		}
		getJSON(t, base+"/v1/unattributed-requests?limit=2&cursor="+cursor, &page)
		all = append(all, page.Requests...)
		if page.Next == nil {
			break
		}
		cursor = *page.Next
	}
	withLab := 0
	for _, w := range all {
		if w.Cluster != "default" || w.Source != "vegeta" || w.IP == "" || w.OccurredAt.IsZero() || !strings.HasPrefix(w.ID, "request/vegeta/default/") || w.Reason == "" {
			t.Errorf("waiting result %+v", w)
		}
		if slices.Equal(w.ClustersWithIP, []string{"lab"}) {
			withLab++
		}
	}
	if len(all) != 4 || withLab != 3 {
		t.Errorf("GET /v1/unattributed-requests: %d results, %d known in lab; want 4 and 3: %+v", len(all), withLab, all)
	}
	if code, ctype, _ := get(t, base+"/v1/unattributed-requests?cursor=garbage"); code != 400 || ctype != "application/problem+json" {
		t.Errorf("bad cursor: %d %s", code, ctype)
	}

	// 2. The right cluster, given after the format as the usage shows it.
	out, errOut, code = imp("vegeta", "-cluster", "lab", results)
	if code != 0 {
		t.Fatalf("corrected import: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("collector import vegeta -cluster lab FILE:\n%s", out)
	for _, want := range []string{"stored: 4 new, 0 already stored", "attributed to pods: 3 of 4", `127.0.0.250 in cluster "lab": 1 result sent`} {
		if !strings.Contains(out, want) {
			t.Errorf("corrected import's report lacks %q:\n%s", want, out)
		}
	}
	for _, uid := range uids {
		var tl struct {
			Counts struct{ Requests int } `json:"counts"`
			Events []struct{ Kind string }
		}
		getJSON(t, base+"/v1/pods/"+uid+"/timeline", &tl)
		var want int
		for _, env := range readSample(t) {
			if env.Kind == events.KindRequest && env.PodUID() == uid {
				want++
			}
		}
		if tl.Counts.Requests != want+1 {
			t.Errorf("pod %s: %d requests, want the sample's %d and the imported one", uid, tl.Counts.Requests, want)
		}
	}
	var afterSecond stats
	getJSON(t, base+"/v1/stats", &afterSecond)
	inStream := streamMessages(t, natsURL)

	// 3. The same again: nothing new is stored.
	out, errOut, code = imp("vegeta", "-cluster", "lab", results)
	if code != 0 || !strings.HasPrefix(out, "published 0 request results") || !strings.Contains(out, "stored: 0 new, 4 already stored") || !strings.Contains(out, "attributed to pods: 3 of 4") {
		t.Errorf("identical import: exit %d\n%s%s", code, out, errOut)
	}
	// Require every result on a pod: the one for an unknown IP makes it fail, still storing nothing.
	out, errOut, code = imp("-require-attributed", "vegeta", results, "-cluster", "lab")
	if code != 1 || !strings.Contains(errOut, "1 results wait for a pod (-require-attributed)") {
		t.Errorf("-require-attributed: exit %d\n%s%s", code, out, errOut)
	}
	if n := streamMessages(t, natsURL); n != inStream {
		t.Errorf("identical imports published %d messages", n-inStream)
	}
	var last stats
	getJSON(t, base+"/v1/stats", &last)
	if last.EventsTotal != afterSecond.EventsTotal || last.Unattributed != 5 {
		t.Errorf("identical imports changed the store: %+v after the second, %+v now (want 5 waiting: 4 in default, 1 in lab)", afterSecond, last)
	}
	if b, _ := json.Marshal(last); !strings.Contains(string(b), `"unattributed_requests_total":5`) {
		t.Errorf("stats: %s", b)
	}
}
