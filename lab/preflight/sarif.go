package preflight

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"path/filepath"
)

// SARIF 2.1.0 (OASIS), the subset code-scanning UIs read: one run, the tool's rules, results
// with a physical location (file, line) and a logical one (the object), suppressions, and input
// errors as tool execution notifications.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool        sarifTool         `json:"tool"`
	Results     []sarifResult     `json:"results"`
	Invocations []sarifInvocation `json:"invocations"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name            string      `json:"name"`
	FullName        string      `json:"fullName"`
	SemanticVersion string      `json:"semanticVersion"`
	Rules           []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string             `json:"id"`
	Name                 string             `json:"name"`
	ShortDescription     sarifText          `json:"shortDescription"`
	FullDescription      sarifText          `json:"fullDescription"`
	Help                 sarifText          `json:"help"`
	DefaultConfiguration sarifConfiguration `json:"defaultConfiguration"`
}

type sarifConfiguration struct {
	Level string `json:"level"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID              string             `json:"ruleId"`
	RuleIndex           int                `json:"ruleIndex"`
	Level               string             `json:"level"`
	Message             sarifText          `json:"message"`
	Locations           []sarifLocation    `json:"locations"`
	PartialFingerprints map[string]string  `json:"partialFingerprints"`
	Suppressions        []sarifSuppression `json:"suppressions,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

type sarifSuppression struct {
	Kind          string `json:"kind"`
	Justification string `json:"justification"`
}

type sarifInvocation struct {
	ExecutionSuccessful        bool                `json:"executionSuccessful"`
	ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications"`
}

type sarifNotification struct {
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

func sarifLevel(s Severity) string {
	switch s {
	case Error:
		return "error"
	case Warning:
		return "warning"
	}
	return "note"
}

func artifactURI(file string) string {
	if file == "<stdin>" {
		return "stdin"
	}
	return (&url.URL{Path: filepath.ToSlash(file)}).String()
}

func physical(file string, line int) *sarifPhysical {
	p := &sarifPhysical{ArtifactLocation: sarifArtifact{URI: artifactURI(file)}}
	if line > 0 {
		p.Region = &sarifRegion{StartLine: line}
	}
	return p
}

// WriteSARIF writes the report as a SARIF 2.1.0 log. Suppressed findings are results with an
// inSource suppression; input errors are tool execution notifications (executionSuccessful is
// false then).
func (r *Report) WriteSARIF(w io.Writer, version string) error {
	index := map[string]int{}
	driver := sarifDriver{Name: "schedlens-preflight", FullName: "schedlens lab preflight", SemanticVersion: version}
	for i, rule := range Rules {
		index[rule.ID] = i
		driver.Rules = append(driver.Rules, sarifRule{
			ID: rule.ID, Name: rule.ID, ShortDescription: sarifText{rule.Summary}, FullDescription: sarifText{rule.Summary + ": " + rule.Why},
			Help: sarifText{rule.Fix}, DefaultConfiguration: sarifConfiguration{sarifLevel(rule.Severity)},
		})
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Results: []sarifResult{}}
	add := func(f Finding, suppressed bool) {
		h := sha256.Sum256([]byte(f.Rule + "\x00" + f.Object.String() + "\x00" + f.Field + "\x00" + f.Message))
		res := sarifResult{
			RuleID: f.Rule, RuleIndex: index[f.Rule], Level: sarifLevel(f.Severity),
			Message: sarifText{f.Message + ". Why: " + f.Why + ". Fix: " + f.Fix},
			Locations: []sarifLocation{{
				PhysicalLocation: physical(f.Object.File, f.Line),
				LogicalLocations: []sarifLogical{{Name: f.Object.Name, FullyQualifiedName: f.Object.String(), Kind: "resource"}},
			}},
			PartialFingerprints: map[string]string{"schedlensPreflight/v1": hex.EncodeToString(h[:16])},
		}
		if suppressed {
			res.Suppressions = []sarifSuppression{{Kind: "inSource", Justification: AnnotationIgnore + " on the object"}}
		}
		run.Results = append(run.Results, res)
	}
	for _, f := range r.Findings {
		add(f, false)
	}
	for _, f := range r.Suppressed {
		add(f, true)
	}
	inv := sarifInvocation{ExecutionSuccessful: len(r.InputErrors) == 0, ToolExecutionNotifications: []sarifNotification{}}
	for _, e := range r.InputErrors {
		inv.ToolExecutionNotifications = append(inv.ToolExecutionNotifications, sarifNotification{
			Level: "error", Message: sarifText{e.Message}, Locations: []sarifLocation{{PhysicalLocation: physical(e.File, e.Line)}},
		})
	}
	run.Invocations = []sarifInvocation{inv}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}})
}
