package io.kafkadiskguard.policy;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.server.policy.CreateTopicPolicy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A CreateTopicPolicy that asks kafka-disk-guard whether a new topic's
 * reserved space still fits under the cluster's limit, and refuses it with
 * POLICY_VIOLATION when it does not.
 *
 * <p>Settings (broker or controller properties; the URL may also come from
 * the environment variable KAFKA_DISK_GUARD_URL):
 * <ul>
 *   <li>{@code kafka.disk.guard.url}: the guard's check endpoint, e.g.
 *       {@code http://kafka-disk-guard:9308/api/v1/reserve/check} (required)</li>
 *   <li>{@code kafka.disk.guard.timeout.ms}: time allowed for one answer
 *       (default 2000). The controller waits on this call, so keep it short.</li>
 *   <li>{@code kafka.disk.guard.on.unreachable}: {@code allow} (default) or
 *       {@code refuse}: what to do when the guard cannot answer.</li>
 * </ul>
 *
 * <p>Kafka's internal topics (__consumer_offsets, __transaction_state,
 * __share_group_state, __cluster_metadata: the guard's list, see
 * {@link InternalTopics}) are always admitted without asking.
 */
public class ReservedSpacePolicy implements CreateTopicPolicy {
    public static final String URL_CONFIG = "kafka.disk.guard.url";
    public static final String TIMEOUT_CONFIG = "kafka.disk.guard.timeout.ms";
    public static final String ON_UNREACHABLE_CONFIG = "kafka.disk.guard.on.unreachable";
    public static final String URL_ENV = "KAFKA_DISK_GUARD_URL";

    private static final Logger log = LoggerFactory.getLogger(ReservedSpacePolicy.class);
    private static final Set<String> INTERNAL_TOPICS = InternalTopics.load();

    private URI url;
    private Duration timeout = Duration.ofMillis(2000);
    private boolean refuseWhenUnreachable;
    private HttpClient client;

    @Override
    public void configure(Map<String, ?> configs) {
        Object u = configs.get(URL_CONFIG);
        String us = u == null ? System.getenv(URL_ENV) : u.toString();
        if (us == null || us.isBlank()) {
            throw new ConfigException(URL_CONFIG, us, "the kafka-disk-guard check URL is required (or set " + URL_ENV + ")");
        }
        try {
            url = URI.create(us.trim());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(URL_CONFIG, us, "not a URL: " + e.getMessage());
        }
        if (!"http".equals(url.getScheme()) && !"https".equals(url.getScheme())) {
            throw new ConfigException(URL_CONFIG, us, "want an http or https URL");
        }
        Object t = configs.get(TIMEOUT_CONFIG);
        if (t != null) {
            try {
                long ms = Long.parseLong(t.toString().trim());
                if (ms <= 0) {
                    throw new NumberFormatException("not positive");
                }
                timeout = Duration.ofMillis(ms);
            } catch (NumberFormatException e) {
                throw new ConfigException(TIMEOUT_CONFIG, t, "want a positive number of milliseconds");
            }
        }
        Object o = configs.get(ON_UNREACHABLE_CONFIG);
        String os = o == null ? "allow" : o.toString().trim();
        switch (os) {
            case "allow": refuseWhenUnreachable = false; break;
            case "refuse": refuseWhenUnreachable = true; break;
            default: throw new ConfigException(ON_UNREACHABLE_CONFIG, o, "want allow or refuse");
        }
        client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).build();
        log.info("kafka-disk-guard reserved-space policy asks {} (timeout {} ms, on unreachable: {})",
            url, timeout.toMillis(), os);
    }

    @Override
    public void validate(RequestMetadata md) throws PolicyViolationException {
        if (INTERNAL_TOPICS.contains(md.topic())) {
            log.info("kafka-disk-guard admits Kafka's internal topic {} without asking", md.topic());
            return;
        }
        String body = requestJson(md);
        HttpResponse<String> res;
        try {
            HttpRequest req = HttpRequest.newBuilder(url)
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8))
                .build();
            res = client.send(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (IOException e) {
            unreachable(md.topic(), e.toString());
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            unreachable(md.topic(), "interrupted");
            return;
        }
        if (res.statusCode() != 200) {
            unreachable(md.topic(), "HTTP " + res.statusCode() + ": " + errorText(res.body()));
            return;
        }
        Object allowed;
        Object reason;
        try {
            Object parsed = Json.parse(res.body());
            if (!(parsed instanceof Map)) {
                throw new IllegalArgumentException("not a JSON object");
            }
            Map<?, ?> m = (Map<?, ?>) parsed;
            allowed = m.get("allowed");
            reason = m.get("reason");
        } catch (IllegalArgumentException e) {
            unreachable(md.topic(), "unreadable answer: " + e.getMessage());
            return;
        }
        if (!(allowed instanceof Boolean)) {
            unreachable(md.topic(), "answer without \"allowed\"");
            return;
        }
        if (!(Boolean) allowed) {
            String msg = reason instanceof String ? (String) reason : "reserved storage limit reached";
            log.info("kafka-disk-guard refused topic {}: {}", md.topic(), msg);
            throw new PolicyViolationException(msg);
        }
    }

    private void unreachable(String topic, String why) {
        if (refuseWhenUnreachable) {
            log.warn("kafka-disk-guard at {} gave no answer for topic {} ({}); refusing ({}=refuse)",
                url, topic, why, ON_UNREACHABLE_CONFIG);
            throw new PolicyViolationException("kafka-disk-guard could not check the reserved storage limit for topic "
                + topic + " (" + why + "); refused because " + ON_UNREACHABLE_CONFIG + "=refuse");
        }
        log.warn("kafka-disk-guard at {} gave no answer for topic {} ({}); allowing ({}=allow)",
            url, topic, why, ON_UNREACHABLE_CONFIG);
    }

    private static String errorText(String body) {
        try {
            Object parsed = Json.parse(body);
            if (parsed instanceof Map && ((Map<?, ?>) parsed).get("error") instanceof String) {
                return (String) ((Map<?, ?>) parsed).get("error");
            }
        } catch (IllegalArgumentException e) {
            // fall through: show the start of the body
        }
        return body.length() > 200 ? body.substring(0, 200) : body;
    }

    /** The guard's request: see reserve.Request in the Go code. */
    static String requestJson(RequestMetadata md) {
        StringBuilder b = new StringBuilder(256);
        b.append("{\"operation\":\"create_topic\",\"topic\":");
        Json.quote(b, md.topic());
        b.append(",\"partitions\":").append(md.numPartitions() == null ? -1 : md.numPartitions());
        b.append(",\"replication_factor\":").append(md.replicationFactor() == null ? -1 : md.replicationFactor());
        b.append(",\"configs\":{");
        boolean first = true;
        for (Map.Entry<String, String> e : new TreeMap<>(md.configs()).entrySet()) {
            if (e.getValue() == null) {
                continue;
            }
            if (!first) {
                b.append(',');
            }
            first = false;
            Json.quote(b, e.getKey());
            b.append(':');
            Json.quote(b, e.getValue());
        }
        b.append('}');
        Map<Integer, List<Integer>> assignments = md.replicasAssignments();
        if (assignments != null && !assignments.isEmpty()) {
            b.append(",\"assignments\":{");
            first = true;
            for (Map.Entry<Integer, List<Integer>> e : new TreeMap<>(assignments).entrySet()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append('"').append(e.getKey()).append("\":[");
                for (int i = 0; i < e.getValue().size(); i++) {
                    if (i > 0) {
                        b.append(',');
                    }
                    b.append(e.getValue().get(i));
                }
                b.append(']');
            }
            b.append('}');
        }
        b.append('}');
        return b.toString();
    }

    @Override
    public void close() {
        client = null;
    }
}
