package enforcer

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// An event rides its log record unseen: the JSON and text logs read as
// before, and a handler gets the typed value back with Event.
func TestEventsRideLogRecordsUnseen(t *testing.T) {
	ev := ProtectionChange{On: true, Strategy: StrategyACL, Topic: "orders"}
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
	} {
		var buf bytes.Buffer
		slog.New(h(&buf)).Warn("write protection on", "topic", "orders", eventAttr(ev))
		if out := buf.String(); strings.Contains(out, EventKey) || !strings.Contains(out, "orders") {
			t.Errorf("log line shows the event: %s", out)
		}
	}
	got, ok := Event(eventAttr(ev)).(ProtectionChange)
	if !ok || got.Topic != "orders" || !got.On {
		t.Errorf("Event = %#v, want the ProtectionChange", Event(eventAttr(ev)))
	}
	for _, e := range []slog.LogValuer{CordonDone{Cordon: true}, MoveDone{Move: Move{Topic: "orders"}}} {
		if Event(eventAttr(e)) != e {
			t.Errorf("Event(%#v) = %#v", e, Event(eventAttr(e)))
		}
	}
	if Event(slog.String(EventKey, "x")) != nil || Event(slog.Any("other", ev)) != nil {
		t.Error("Event found an event in an attribute that carries none")
	}
}
