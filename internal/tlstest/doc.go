// Package tlstest makes certificates for tests of HTTPS servers.
package tlstest
