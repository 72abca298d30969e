package io.kafkadiskguard.policy;

import java.util.ArrayDeque;

/**
 * Bounds the total time the controller's event thread spends waiting for
 * the guard: within any window of {@code windowNanos}, at most
 * {@code budgetNanos} of waiting. Each wait is given at most what is left
 * of the budget over the last window, so the bound holds for every window,
 * however many topics one CreateTopics request names (Kafka calls the
 * policy once per topic, one after another).
 */
final class WaitBudget {
    private final long budgetNanos;
    private final long windowNanos;
    /** Past waits as {start, end}, oldest first. */
    private final ArrayDeque<long[]> waits = new ArrayDeque<>();

    WaitBudget(long budgetNanos, long windowNanos) {
        this.budgetNanos = budgetNanos;
        this.windowNanos = windowNanos;
    }

    /** What may still be waited at {@code now}. */
    synchronized long remainingNanos(long now) {
        long from = now - windowNanos;
        while (!waits.isEmpty() && waits.peekFirst()[1] <= from) {
            waits.pollFirst();
        }
        long spent = 0;
        for (long[] w : waits) {
            spent += w[1] - Math.max(w[0], from);
        }
        return Math.max(0, budgetNanos - spent);
    }

    /** Records a wait from start to end. */
    synchronized void record(long start, long end) {
        if (end > start) {
            waits.addLast(new long[] {start, end});
        }
    }
}
