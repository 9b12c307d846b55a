package events

import (
	"slices"
	"testing"
)

func TestDeviceAttributeRefs(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"`, []string{"gpu.nvidia.com/productName"}},
		{`device.attributes["gpu.nvidia.com"]["type"] == "mig" && device.attributes[ "gpu.nvidia.com" ].?profile.orValue("") == "1g.10gb"`,
			[]string{"gpu.nvidia.com/profile", "gpu.nvidia.com/type"}},
		{`device.attributes["dra.net"].rdma && device.attributes["dra.net"].rdma`, []string{"dra.net/rdma"}},
		// Single quotes and space before the name, as lab preflight read them.
		{`device.attributes['gpu.nvidia.com'] . productName == 'NVIDIA H200'`, []string{"gpu.nvidia.com/productName"}},
		// Not attributes: the driver, capacity, a map taken whole.
		{`device.driver == "gpu.nvidia.com" && device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0`, nil},
		{`"productName" in device.attributes["gpu.nvidia.com"]`, nil},
	} {
		if got := DeviceAttributeRefs(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.expr, got, tc.want)
		}
	}
}
