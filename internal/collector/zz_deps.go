package collector

import (
	_ "github.com/prometheus/common/expfmt"
	_ "github.com/tsenart/vegeta/v12/lib"
)
