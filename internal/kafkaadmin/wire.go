package kafkaadmin

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

// Sarama has no AlterReplicaLogDirs (it knows the API key only), and its
// Broker sends no request it does not know. This file is the smallest
// Kafka wire client that can: one connection per call, TLS and SASL
// (PLAIN, SCRAM) as the guard's Sarama configuration says, non-flexible
// request versions only (request header v1, response header v0).

// Kafka API keys used on the raw connection.
const (
	apiSaslHandshake       = 17
	apiAlterReplicaLogDirs = 34
	apiSaslAuthenticate    = 36
)

// wireWriter builds a request body.
type wireWriter struct{ b []byte }

func (w *wireWriter) int16(v int16) { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *wireWriter) int32(v int32) { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *wireWriter) str(s string) {
	w.int16(int16(len(s)))
	w.b = append(w.b, s...)
}
func (w *wireWriter) bytes(p []byte) {
	w.int32(int32(len(p)))
	w.b = append(w.b, p...)
}

// wireReader decodes a response body; the first error sticks.
type wireReader struct {
	b   []byte
	err error
}

func (r *wireReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.err = errors.New("short kafka response")
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *wireReader) int16() int16 {
	p := r.take(2)
	if p == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(p))
}

func (r *wireReader) int32() int32 {
	p := r.take(4)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (r *wireReader) int64() int64 {
	p := r.take(8)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

// str reads a (nullable) string; null reads as "".
func (r *wireReader) str() string {
	n := r.int16()
	if n < 0 {
		return ""
	}
	return string(r.take(int(n)))
}

func (r *wireReader) bytes() []byte {
	n := r.int32()
	if n < 0 {
		return nil
	}
	return r.take(int(n))
}

// arrayLen reads an array length; a null array is empty.
func (r *wireReader) arrayLen() int {
	n := r.int32()
	if n < 0 {
		return 0
	}
	if int(n) > len(r.b) { // every element takes at least one byte
		r.err = errors.New("kafka response array longer than the response")
		return 0
	}
	return int(n)
}

// wireConn is one authenticated connection to one broker.
type wireConn struct {
	nc       net.Conn
	clientID string
	timeout  time.Duration
	corr     int32
}

// dialWire connects to addr as sc says (TLS, SASL).
func dialWire(ctx context.Context, sc *sarama.Config, addr string) (*wireConn, error) {
	d := net.Dialer{Timeout: sc.Net.DialTimeout}
	var nc net.Conn
	var err error
	if sc.Net.TLS.Enable {
		td := tls.Dialer{NetDialer: &d, Config: sc.Net.TLS.Config}
		nc, err = td.DialContext(ctx, "tcp", addr)
	} else {
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	c := &wireConn{nc: nc, clientID: sc.ClientID, timeout: sc.Net.ReadTimeout}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if sc.Net.SASL.Enable {
		if err := c.authenticate(sc); err != nil {
			nc.Close()
			return nil, fmt.Errorf("sasl on %s: %w", addr, err)
		}
	}
	return c, nil
}

func (c *wireConn) close() error { return c.nc.Close() }

// roundTrip sends one request and returns the response body after its
// header.
func (c *wireConn) roundTrip(apiKey, version int16, body []byte) ([]byte, error) {
	c.corr++
	var h wireWriter
	h.int16(apiKey)
	h.int16(version)
	h.int32(c.corr)
	h.str(c.clientID)
	msg := make([]byte, 0, 4+len(h.b)+len(body))
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(h.b)+len(body)))
	msg = append(append(msg, h.b...), body...)
	if err := c.nc.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, err
	}
	if _, err := c.nc.Write(msg); err != nil {
		return nil, fmt.Errorf("send api %d: %w", apiKey, err)
	}
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil {
		return nil, fmt.Errorf("read api %d response: %w", apiKey, err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("api %d response of %d bytes", apiKey, n)
	}
	resp := make([]byte, n)
	if _, err := io.ReadFull(c.nc, resp); err != nil {
		return nil, fmt.Errorf("read api %d response: %w", apiKey, err)
	}
	if got := int32(binary.BigEndian.Uint32(resp)); got != c.corr {
		return nil, fmt.Errorf("api %d response: correlation id %d, want %d", apiKey, got, c.corr)
	}
	return resp[4:], nil
}

// authenticate runs SaslHandshake v1 and SaslAuthenticate v1 rounds.
func (c *wireConn) authenticate(sc *sarama.Config) error {
	mech := string(sc.Net.SASL.Mechanism)
	if mech == "" {
		mech = sarama.SASLTypePlaintext
	}
	var hs wireWriter
	hs.str(mech)
	resp, err := c.roundTrip(apiSaslHandshake, 1, hs.b)
	if err != nil {
		return err
	}
	r := wireReader{b: resp}
	if code := r.int16(); r.err == nil && code != 0 {
		return fmt.Errorf("handshake for %s: %w", mech, sarama.KError(code))
	}
	if r.err != nil {
		return r.err
	}
	step := func(token []byte) ([]byte, error) {
		var w wireWriter
		w.bytes(token)
		resp, err := c.roundTrip(apiSaslAuthenticate, 1, w.b)
		if err != nil {
			return nil, err
		}
		r := wireReader{b: resp}
		code := r.int16()
		msg := r.str()
		out := r.bytes()
		r.int64() // session lifetime
		if r.err != nil {
			return nil, r.err
		}
		if code != 0 {
			return nil, fmt.Errorf("authenticate: %w: %s", sarama.KError(code), msg)
		}
		return out, nil
	}
	switch {
	case mech == sarama.SASLTypePlaintext:
		_, err := step([]byte(sc.Net.SASL.AuthIdentity + "\x00" + sc.Net.SASL.User + "\x00" + sc.Net.SASL.Password))
		return err
	case strings.HasPrefix(mech, "SCRAM-") && sc.Net.SASL.SCRAMClientGeneratorFunc != nil:
		sc2 := sc.Net.SASL.SCRAMClientGeneratorFunc()
		if err := sc2.Begin(sc.Net.SASL.User, sc.Net.SASL.Password, sc.Net.SASL.SCRAMAuthzID); err != nil {
			return err
		}
		challenge := ""
		for !sc2.Done() {
			msg, err := sc2.Step(challenge)
			if err != nil {
				return err
			}
			if sc2.Done() && msg == "" {
				break
			}
			out, err := step([]byte(msg))
			if err != nil {
				return err
			}
			challenge = string(out)
		}
		return nil
	default:
		return fmt.Errorf("mechanism %s is not supported on a raw connection", mech)
	}
}

// alterReplicaLogDirs sends AlterReplicaLogDirs v1: each partition's
// replica on this broker goes to the log dir named. It returns each
// partition's error (nil when the broker accepted the move).
func (c *wireConn) alterReplicaLogDirs(moves map[string]map[string][]int32) (map[string]map[int32]error, error) {
	var w wireWriter
	w.int32(int32(len(moves)))
	for dir, topics := range moves {
		w.str(dir)
		w.int32(int32(len(topics)))
		for topic, parts := range topics {
			w.str(topic)
			w.int32(int32(len(parts)))
			for _, p := range parts {
				w.int32(p)
			}
		}
	}
	resp, err := c.roundTrip(apiAlterReplicaLogDirs, 1, w.b)
	if err != nil {
		return nil, err
	}
	r := wireReader{b: resp}
	r.int32() // throttle time
	out := map[string]map[int32]error{}
	for range r.arrayLen() {
		topic := r.str()
		for range r.arrayLen() {
			p := r.int32()
			code := r.int16()
			if out[topic] == nil {
				out[topic] = map[int32]error{}
			}
			if code != 0 {
				out[topic][p] = sarama.KError(code)
			} else {
				out[topic][p] = nil
			}
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("decode alter replica log dirs response: %w", r.err)
	}
	return out, nil
}
