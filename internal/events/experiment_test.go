package events_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedlens/schedlens/internal/events"
)

// A definition goes through the typed Experiment unchanged: what it does not know (a key of
// its own, an arm's placement rules, a fixed value of another type) is written back as it came.
func TestExperimentKeepsWhatItDoesNotKnow(t *testing.T) {
	for name, in := range map[string]string{
		"typed":                    `{"name":"day20","fixed":{"image":"i","model":"m","pods":3,"request":{"method":"POST","port":8000,"path":"/x","body":"{}"}},"metrics":["pending","latency"],"repeats":3,"baseline":"control","arms":[{"name":"control"},{"name":"affinity","description":"d","required":{"accelerator":"nvidia-gpu"}}],"thresholds":{"error_rate":0.01},"margins":{"latency":"5%"},"alpha":0.1}`,
		"the seed's":               `{"name":"day20","change":"node affinity / PriorityClass / GPU sharing","fixed":"image, model, input","metrics":"placement, Pending, preemption, latency","repeats":3}`,
		"odd values":               `{"name":"x","fixed":{"pods":"three","gpu":"A100","request":{"port":"8000","retries":2}},"arms":["control",{"name":"t","sharing":"mps"}],"owner":"team-a","notes":[1,2]}`,
		"empty lists":              `{"name":"x","metrics":[],"arms":[]}`,
		"a name that is no string": `{"name":"x","arms":[{"name":{"0":null}},{"name":7,"description":["a"]},{"name":""}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			var e events.Experiment
			if err := json.Unmarshal([]byte(in), &e); err != nil {
				t.Fatal(err)
			}
			out, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			_ = json.Unmarshal([]byte(in), &want)
			_ = json.Unmarshal(out, &got)
			if name == "odd values" {
				// A numeric string port is read as the number it names.
				want.(map[string]any)["fixed"].(map[string]any)["request"].(map[string]any)["port"] = 8000.0
			}
			if name == "empty lists" {
				delete(want.(map[string]any), "arms") // an empty arms list says nothing
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("round trip (-in +out):\n%s", diff)
			}
		})
	}
	var seed events.Experiment
	_ = json.Unmarshal([]byte(`{"name":"day20","fixed":"image, model, input","metrics":"placement, Pending"}`), &seed)
	if seed.Fixed.Text != "image, model, input" || !cmp.Equal(seed.Metrics.List, []string{"placement", "Pending"}) {
		t.Errorf("the seed's prose: fixed %+v, metrics %+v", seed.Fixed, seed.Metrics)
	}
}
