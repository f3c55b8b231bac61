// Package golden compares test output with golden files under testdata/,
// and rewrites them when the tests run with -update.
package golden
