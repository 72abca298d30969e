package io.kafkadiskguard.policy;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * Kafka's internal topics, which the policy admits without asking the
 * guard. The list is the guard's own (Go: agent.KafkaInternalTopics): the
 * resource internal-topics.txt is generated from it and checked by the
 * guard's tests, so the plugin never keeps a list of its own.
 */
final class InternalTopics {
    static final String RESOURCE = "internal-topics.txt";

    private InternalTopics() {
    }

    /** Reads the list from the jar: one topic a line, '#' starts a comment. */
    static Set<String> load() {
        try (InputStream in = InternalTopics.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("kafka-disk-guard policy: resource " + RESOURCE + " missing from the jar");
            }
            Set<String> topics = new LinkedHashSet<>();
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                String t = line.strip();
                if (!t.isEmpty() && !t.startsWith("#")) {
                    topics.add(t);
                }
            }
            if (topics.isEmpty()) {
                throw new IllegalStateException("kafka-disk-guard policy: resource " + RESOURCE + " lists no topic");
            }
            return Set.copyOf(topics);
        } catch (IOException e) {
            throw new UncheckedIOException("kafka-disk-guard policy: read " + RESOURCE, e);
        }
    }
}
