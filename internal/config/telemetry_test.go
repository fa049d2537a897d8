package config

import (
	"errors"
	"strings"
	"testing"
)

func TestMetricsListenAndOTLPEndpointAreValidated(t *testing.T) {
	for _, good := range []string{
		"[metrics]\nlisten = \"127.0.0.1:9464\"\n",
		"[metrics]\nlisten = \"[::1]:0\"\n",
		"[metrics]\nlisten = \"localhost:9464\"\n",
		"[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n",
		"[telemetry]\notlp_endpoint = \"https://collector.example.com/otel/\"\n",
	} {
		if _, err := Load(write(t, good)); err != nil {
			t.Errorf("%q refused: %v", good, err)
		}
	}
	for _, tt := range []struct{ body, key string }{
		{"[metrics]\nlisten = \"9464\"\n", "metrics.listen"},
		{"[metrics]\nlisten = \"collector.local:9464\"\n", "metrics.listen"},
		{"[metrics]\nlisten = \"127.0.0.1:65536\"\n", "metrics.listen"},
		{"[metrics]\nlisten = \"127.0.0.1:http\"\n", "metrics.listen"},
		{"[telemetry]\notlp_endpoint = \"127.0.0.1:4318\"\n", "telemetry.otlp_endpoint"},
		{"[telemetry]\notlp_endpoint = \"grpc://secret@127.0.0.1:4317\"\n", "telemetry.otlp_endpoint"},
		{"[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318/?token=secret\"\n", "telemetry.otlp_endpoint"},
	} {
		_, err := Load(write(t, tt.body))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Key != tt.key {
			t.Errorf("%q: %v, want a validation error of %s", tt.body, err, tt.key)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the message repeats the URL: %v", tt.body, err)
		}
	}
}

func TestMetricsAndTelemetryAreSettableProperties(t *testing.T) {
	cfg := Default()
	if err := cfg.Set("metrics.listen", []byte(`"127.0.0.1:9464"`)); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Set("telemetry.otlp_endpoint", []byte(`"http://127.0.0.1:4318"`)); err != nil {
		t.Fatal(err)
	}
	if cfg.Metrics.Listen != "127.0.0.1:9464" || cfg.Telemetry.OTLPEndpoint != "http://127.0.0.1:4318" || cfg.Validate() != nil {
		t.Fatalf("after set: %+v %+v, %v", cfg.Metrics, cfg.Telemetry, cfg.Validate())
	}
	if got, err := cfg.Get("metrics.listen"); err != nil || string(got) != `"127.0.0.1:9464"` {
		t.Errorf("config get metrics.listen: %s, %v", got, err)
	}
}
