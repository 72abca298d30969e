package io.kafkadiskguard.policy;

/**
 * Opens after {@code threshold} consecutive failures to get an answer from
 * the guard: while open, topics are decided at once by the fallback,
 * without waiting. After {@code openNanos} one request is let through; an
 * answer closes the breaker, a failure opens it again.
 */
final class CircuitBreaker {
    private final int threshold;
    private final long openNanos;
    private int failures;
    private boolean open;
    private long openUntil;

    CircuitBreaker(int threshold, long openNanos) {
        this.threshold = threshold;
        this.openNanos = openNanos;
    }

    /** Whether a request may go to the guard at {@code now}. */
    synchronized boolean allows(long now) {
        return !open || now - openUntil >= 0;
    }

    /** Nanoseconds until the next trial request, 0 when closed. */
    synchronized long retryInNanos(long now) {
        return open ? Math.max(0, openUntil - now) : 0;
    }

    synchronized int failures() {
        return failures;
    }

    synchronized void success() {
        failures = 0;
        open = false;
    }

    /** Counts a failure; true when the breaker is (now) open. */
    synchronized boolean failure(long now) {
        failures++;
        if (open || failures >= threshold) {
            open = true;
            openUntil = now + openNanos;
        }
        return open;
    }
}
