package compare

// Metrics are what a comparison reports for every arm, in order.
var Metrics = []Metric{
	{Name: "pending_p50_s", Unit: "s", Direction: LowerIsBetter, Group: Placement},
	{Name: "pending_p95_s", Unit: "s", Direction: LowerIsBetter, Group: Placement},
	{Name: "pending_max_s", Unit: "s", Direction: LowerIsBetter, Group: Placement},
	{Name: "never_scheduled", Unit: "pods", Direction: LowerIsBetter, Group: Placement},
	{Name: "preemptions_suffered", Unit: "pods", Direction: LowerIsBetter, Group: Placement},
	{Name: "preemptions_caused", Unit: "pods", Direction: LowerIsBetter, Group: Resource},
	{Name: "start_p50_s", Unit: "s", Direction: LowerIsBetter, Group: Execution},
	{Name: "model_load_p50_s", Unit: "s", Direction: LowerIsBetter, Group: Execution},
	{Name: "time_to_first_success_p50_s", Unit: "s", Direction: LowerIsBetter, Group: Execution},
	{Name: "time_to_first_success_p95_s", Unit: "s", Direction: LowerIsBetter, Group: Execution},
	{Name: "latency_p50_ms", Unit: "ms", Direction: LowerIsBetter, Group: Execution},
	{Name: "latency_p95_ms", Unit: "ms", Direction: LowerIsBetter, Group: Execution},
	{Name: "latency_p99_ms", Unit: "ms", Direction: LowerIsBetter, Group: Execution},
	{Name: "error_rate", Unit: "ratio", Direction: LowerIsBetter, Group: Execution},
	{Name: "restarts_per_pod", Unit: "restarts", Direction: LowerIsBetter, Group: Execution},
	{Name: "interruption_s", Unit: "s", Direction: LowerIsBetter, Group: Execution},
	{Name: "gpu_util_mean_pct", Unit: "%", Direction: HigherIsBetter, Group: Resource},
	{Name: "gpu_idle_s", Unit: "s", Direction: LowerIsBetter, Group: Resource},
}
