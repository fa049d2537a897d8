package web

import "testing"

// Off loopback the web client needs TLS and pairing tokens; which addresses are
// loopback decides it.
func TestWhichListenAddressesAreLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7781": true, "127.0.0.2:0": true, "[::1]:7781": true, "localhost:7781": true,
		"0.0.0.0:7781": false, "[::]:7781": false, ":7781": false, "192.168.1.5:7781": false,
		"example.com:7781": false, "127.0.0.1": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
	for host, want := range map[string]bool{"127.0.0.1:7781": true, "localhost": true, "[::1]:1": true, "[::1]": true, "rebound.example:7781": false, "10.0.0.1": false} {
		if got := loopbackHost(host); got != want {
			t.Errorf("loopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
