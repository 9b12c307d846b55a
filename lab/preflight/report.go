package preflight

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON (schema in docs/preflight.md).
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report for a terminal: input errors, findings with why and fix, the
// dry run's placement, and a summary line.
func (r *Report) WriteTable(w io.Writer) error {
	pools := make([]string, 0, len(r.Cluster.Pools))
	for _, p := range r.Cluster.Pools {
		pools = append(pools, p.Name)
	}
	fmt.Fprintf(w, "preflight: %d objects against %s: %d nodes in %d pools (%s), %d PriorityClasses, %d PDBs, %d GPU pods\n",
		r.Objects, r.Cluster.Source, r.Cluster.Nodes, len(r.Cluster.Pools), strings.Join(pools, ", "), r.Cluster.PriorityClasses, r.Cluster.PDBs, r.Cluster.GPUPods)
	switch c := r.Cluster; {
	case c.DRANote != "":
		fmt.Fprintf(w, "DRA: %s\n", c.DRANote)
	case c.DeviceClasses > 0 || c.ResourceSlices > 0:
		var parts []string
		for _, p := range c.Pools {
			for _, class := range slices.Sorted(maps.Keys(p.DRADevices)) {
				parts = append(parts, fmt.Sprintf("%s %d %s", p.Name, p.DRADevices[class], class))
			}
		}
		fmt.Fprintf(w, "DRA: %d DeviceClasses, %d ResourceSlices, %d allocated claims; devices: %s\n",
			c.DeviceClasses, c.ResourceSlices, c.DRAClaims, strings.Join(parts, ", "))
	}
	if c := r.Cluster; c.LabelsNote != "" {
		fmt.Fprintf(w, "label registry: %s\n", c.LabelsNote)
	}
	if len(r.Ignored) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.Ignored)) {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, r.Ignored[k]))
		}
		fmt.Fprintf(w, "not checked: %s\n", strings.Join(parts, ", "))
	}
	if len(r.InputErrors) > 0 {
		fmt.Fprintln(w, "\ninput errors:")
		for _, e := range r.InputErrors {
			fmt.Fprintf(w, "  %s\n", e.Error())
		}
	}
	if len(r.Findings) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SEVERITY\tRULE\tOBJECT\tWHERE\tFINDING")
		var seen []string
		for _, f := range r.Findings {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s:%d\t%s\n", f.Severity, f.Rule, f.Object.String(), f.Object.File, f.Line, f.Message)
			rule, _ := RuleByID(f.Rule)
			if f.Severity != Info && f.Fix != rule.Fix {
				fmt.Fprintf(tw, "\t\t\t\tfix: %s\n", f.Fix)
			}
			if f.Severity != Info && !slices.Contains(seen, f.Rule) {
				seen = append(seen, f.Rule)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(seen) > 0 {
			fmt.Fprintln(w, "\nwhy, and the usual fix:")
			for _, id := range seen {
				rule, _ := RuleByID(id)
				fmt.Fprintf(w, "  %s: %s.\n    fix: %s\n", id, rule.Why, rule.Fix)
			}
		}
	}
	if s := r.Simulation; s != nil {
		pods := 0
		for _, g := range s.Groups {
			pods += len(g.Pods)
		}
		fmt.Fprintf(w, "\ndry run with the real scheduler (kube-scheduler %s): %d pods in %d groups, %.1fs (control plane start %.1fs)\n",
			s.Scheduler, pods, len(s.Groups), s.Seconds, s.StartupSeconds)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tPOD\tSTATUS\tNODE\tPOOL\tGPU MODEL\tSHARING\tSCHEDULER SAYS")
		for _, g := range s.Groups {
			for _, p := range g.Pods {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Name, p.Namespace+"/"+p.Name, p.Status,
					dash(p.Node), dash(p.Pool), dash(p.GPUModel), dash(p.Sharing), dash(p.Message))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, g := range s.Groups {
			for _, v := range g.Preempted {
				who := "pod of the manifests"
				if v.Existing {
					who = "running pod"
				}
				fmt.Fprintf(w, "  group %s: %s %s/%s on %s preempted by %s\n", g.Name, who, v.Namespace, v.Name, v.Node, v.PreemptedBy)
			}
		}
	}
	fmt.Fprintf(w, "\n%s, %s, %s; %d suppressed", plural(r.Summary.Errors, "error"), plural(r.Summary.Warnings, "warning"),
		plural(r.Summary.Infos, "info"), r.Summary.Suppressed)
	if r.Summary.InputErrors > 0 {
		fmt.Fprintf(w, "; %s", plural(r.Summary.InputErrors, "input error"))
	}
	fmt.Fprintln(w)
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
