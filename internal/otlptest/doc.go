// Package otlptest is an in-process OTLP receiver (gRPC or HTTP) for tests: it keeps
// every span and metric data point that exporters send it.
package otlptest
