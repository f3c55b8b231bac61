// Package otlptest is an in-process OTLP/gRPC receiver for tests: it keeps
// every span and metric data point that exporters send it.
package otlptest
