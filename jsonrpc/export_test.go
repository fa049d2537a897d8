package jsonrpc

import "strconv"

// IntID returns the id for the JSON number n, for the package's external tests.
func IntID(n int64) ID { return ID(strconv.AppendInt(nil, n, 10)) }
