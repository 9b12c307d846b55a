package events

import (
	"regexp"
	"slices"
)

// deviceAttributeRef matches a device attribute a DRA CEL selector reads:
// device.attributes["domain"].name, device.attributes["domain"]["name"], .?name, and the same
// with single quotes.
var deviceAttributeRef = regexp.MustCompile(`device\.attributes\[\s*["']([^"']+)["']\s*\]\s*(?:\.\s*\??([A-Za-z_][A-Za-z0-9_]*)|\[\s*["']([^"']+)["']\s*\])`)

// DeviceAttributeRefs are the device attributes a DRA CEL selector reads, as qualified names
// (domain/name: "gpu.nvidia.com/productName"), sorted, each once. It reads the expression's
// text, not its syntax tree: a reference built at run time is not found.
func DeviceAttributeRefs(expr string) []string {
	var out []string
	for _, m := range deviceAttributeRef.FindAllStringSubmatch(expr, -1) {
		name := m[2]
		if name == "" {
			name = m[3]
		}
		out = append(out, m[1]+"/"+name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
