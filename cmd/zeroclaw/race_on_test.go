//go:build race

package main

// raceEnabled makes the end-to-end tests build the daemon with -race too.
const raceEnabled = true
