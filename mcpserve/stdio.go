package mcpserve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxLine bounds one line of the stdio transport: 4 MiB, as any document
// Vibe reads (schema.MaxBytes).
const MaxLine = 4 << 20

// StdioTransport is the MCP stdio transport (newline-delimited JSON-RPC)
// on in and out that survives a client's garbage: a line that is not a
// JSON-RPC message is answered with a parse error (-32700, id null) and
// the session goes on, where the SDK's own transport would end it. A line
// past MaxLine is answered the same way and skipped.
func StdioTransport(in io.Reader, out io.Writer) mcp.Transport {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go filterLines(in, pw, w)
	return &mcp.IOTransport{Reader: pr, Writer: w}
}

// parseError is the JSON-RPC 2.0 answer to a message that cannot be read.
var parseError = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: a line that is not a JSON-RPC message was skipped"}}` + "\n")

// filterLines copies in's JSON-RPC lines to pw, and answers every other
// line on w.
func filterLines(in io.Reader, pw *io.PipeWriter, w io.Writer) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, err := readLine(r)
		switch {
		case tooLong || (len(bytes.TrimSpace(line)) > 0 && !rpcMessage(line)):
			w.Write(parseError)
		case len(bytes.TrimSpace(line)) > 0:
			if _, werr := pw.Write(append(line, '\n')); werr != nil {
				return
			}
		}
		if err != nil {
			pw.CloseWithError(err)
			return
		}
	}
}

// readLine reads one line without its newline. A line past MaxLine is read
// to its end and dropped (tooLong). io.EOF comes with the last line when it
// has no newline.
func readLine(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		part, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(part) > MaxLine {
				tooLong, line = true, nil
			} else {
				line = append(line, part...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, err
	}
}

// rpcMessage reports whether line is one JSON-RPC message or a batch of
// them, as the SDK reads them.
func rpcMessage(line []byte) bool {
	var batch []json.RawMessage
	if err := json.Unmarshal(line, &batch); err == nil {
		if len(batch) == 0 {
			return false
		}
		for _, m := range batch {
			if _, err := jsonrpc.DecodeMessage(m); err != nil {
				return false
			}
		}
		return true
	}
	_, err := jsonrpc.DecodeMessage(line)
	return err == nil
}

// lockedWriter serializes the SDK's messages and the filter's answers:
// each is one Write of a whole line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }
