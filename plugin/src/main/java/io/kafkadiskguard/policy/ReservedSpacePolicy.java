package io.kafkadiskguard.policy;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

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
 * <p>It runs on the KRaft controller's single event thread, once per topic
 * of a CreateTopics request. So it never waits long: each answer gets at
 * most {@code timeout.ms}; all waiting together at most
 * {@code wait.budget.ms} within any {@code wait.window.ms}; and after
 * {@code breaker.failures} failures in a row it stops asking for
 * {@code breaker.open.ms}. A topic the guard does not answer for is decided
 * by {@code on.unreachable}; the plugin reports how many on its next
 * request (headers Kafka-Disk-Guard-Fallbacks-Allow/-Refuse), and the guard
 * counts them (kafka_disk_guard_admission_plugin_fallbacks_total).
 *
 * <p>Settings (broker or controller properties, prefix kafka.disk.guard.;
 * the URL may also come from the environment variable KDG_ADMISSION_URL):
 * url (required), timeout.ms (1000), wait.budget.ms (2500),
 * wait.window.ms (10000), breaker.failures (3), breaker.open.ms (30000),
 * on.unreachable (allow or refuse), basic.auth.username and
 * basic.auth.password (the guard's web config users), ssl.ca.file (PEM CA
 * for an https URL, instead of the JVM's trust store), exempt.topics
 * (comma-separated; default __kafka_disk_guard_protection, the guard's
 * ownership topic: set it to the guard's enforcer.ownershipTopic). See
 * docs/admission.md.
 *
 * <p>Kafka's internal topics (__consumer_offsets, __transaction_state,
 * __share_group_state, __cluster_metadata: the guard's list, see
 * {@link InternalTopics}) and the exempt topics are always admitted
 * without asking.
 */
public class ReservedSpacePolicy implements CreateTopicPolicy {
    static final String PREFIX = "kafka.disk.guard.";
    public static final String URL_CONFIG = PREFIX + "url";
    public static final String TIMEOUT_CONFIG = PREFIX + "timeout.ms";
    public static final String BUDGET_CONFIG = PREFIX + "wait.budget.ms";
    public static final String WINDOW_CONFIG = PREFIX + "wait.window.ms";
    public static final String BREAKER_FAILURES_CONFIG = PREFIX + "breaker.failures";
    public static final String BREAKER_OPEN_CONFIG = PREFIX + "breaker.open.ms";
    public static final String ON_UNREACHABLE_CONFIG = PREFIX + "on.unreachable";
    public static final String USERNAME_CONFIG = PREFIX + "basic.auth.username";
    public static final String PASSWORD_CONFIG = PREFIX + "basic.auth.password";
    public static final String CA_FILE_CONFIG = PREFIX + "ssl.ca.file";
    public static final String EXEMPT_TOPICS_CONFIG = PREFIX + "exempt.topics";
    public static final String URL_ENV = "KDG_ADMISSION_URL";
    /** The guard's ownership topic under its default name (enforcer.ownershipTopic). */
    static final String DEFAULT_OWNERSHIP_TOPIC = "__kafka_disk_guard_protection";

    static final String FALLBACKS_ALLOW = "Kafka-Disk-Guard-Fallbacks-Allow";
    static final String FALLBACKS_REFUSE = "Kafka-Disk-Guard-Fallbacks-Refuse";
    static final String RECORDED_ALLOW = "Kafka-Disk-Guard-Fallbacks-Recorded-Allow";
    static final String RECORDED_REFUSE = "Kafka-Disk-Guard-Fallbacks-Recorded-Refuse";

    /** Below this much budget left, the guard is not asked at all. */
    private static final long MIN_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    private static final Logger log = LoggerFactory.getLogger(ReservedSpacePolicy.class);
    private static final Set<String> INTERNAL_TOPICS = InternalTopics.load();

    private URI url;
    /** Topics admitted without asking besides Kafka's own: the guard's ownership topic. */
    private Set<String> exemptTopics = Set.of(DEFAULT_OWNERSHIP_TOPIC);
    private long timeoutNanos = TimeUnit.MILLISECONDS.toNanos(1000);
    private long budgetMs = 2500;
    private long windowMs = 10000;
    private boolean refuseWhenUnreachable;
    private String authorization;
    private HttpClient client;
    private WaitBudget budget;
    private CircuitBreaker breaker;
    /** Fallback decisions the guard has not recorded yet. */
    private final AtomicLong unreportedAllow = new AtomicLong();
    private final AtomicLong unreportedRefuse = new AtomicLong();

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
        long timeoutMs = positive(configs, TIMEOUT_CONFIG, 1000);
        timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        budgetMs = positive(configs, BUDGET_CONFIG, 2500);
        windowMs = positive(configs, WINDOW_CONFIG, 10000);
        if (budgetMs > windowMs) {
            throw new ConfigException(BUDGET_CONFIG, budgetMs, "must not exceed " + WINDOW_CONFIG + " (" + windowMs + ")");
        }
        long failures = positive(configs, BREAKER_FAILURES_CONFIG, 3);
        long openMs = positive(configs, BREAKER_OPEN_CONFIG, 30000);
        Object o = configs.get(ON_UNREACHABLE_CONFIG);
        String os = o == null ? "allow" : o.toString().trim();
        switch (os) {
            case "allow": refuseWhenUnreachable = false; break;
            case "refuse": refuseWhenUnreachable = true; break;
            default: throw new ConfigException(ON_UNREACHABLE_CONFIG, o, "want allow or refuse");
        }
        String user = string(configs, USERNAME_CONFIG);
        String pass = string(configs, PASSWORD_CONFIG);
        if ((user == null) != (pass == null)) {
            throw new ConfigException(user == null ? USERNAME_CONFIG : PASSWORD_CONFIG, null,
                USERNAME_CONFIG + " and " + PASSWORD_CONFIG + " go together");
        }
        if (user != null) {
            authorization = "Basic " + Base64.getEncoder().encodeToString((user + ":" + pass).getBytes(StandardCharsets.UTF_8));
        }
        HttpClient.Builder b = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofNanos(timeoutNanos));
        String ca = string(configs, CA_FILE_CONFIG);
        if (ca != null) {
            if (!"https".equals(url.getScheme())) {
                throw new ConfigException(CA_FILE_CONFIG, ca, "needs an https " + URL_CONFIG);
            }
            b.sslContext(sslContext(ca));
        }
        client = b.build();
        String exempt = string(configs, EXEMPT_TOPICS_CONFIG);
        if (exempt != null) {
            Set<String> topics = new java.util.LinkedHashSet<>();
            for (String t : exempt.split(",")) {
                if (!t.strip().isEmpty()) {
                    topics.add(t.strip());
                }
            }
            exemptTopics = Set.copyOf(topics);
        }
        budget = new WaitBudget(TimeUnit.MILLISECONDS.toNanos(budgetMs), TimeUnit.MILLISECONDS.toNanos(windowMs));
        breaker = new CircuitBreaker((int) Math.min(failures, Integer.MAX_VALUE), TimeUnit.MILLISECONDS.toNanos(openMs));
        log.info("kafka-disk-guard reserved-space policy asks {} (timeout {} ms, waiting at most {} ms per {} ms, "
            + "breaker after {} failures for {} ms, on unreachable: {}, basic auth: {}, CA file: {}, admitted without asking: {})",
            url, timeoutMs, budgetMs, windowMs, failures, openMs, os, user != null ? "yes" : "no", ca != null ? ca : "none", exemptTopics);
    }

    private static String string(Map<String, ?> configs, String key) {
        Object v = configs.get(key);
        if (v == null) {
            return null;
        }
        String s = v instanceof org.apache.kafka.common.config.types.Password
            ? ((org.apache.kafka.common.config.types.Password) v).value() : v.toString();
        return s.isEmpty() ? null : s;
    }

    private static long positive(Map<String, ?> configs, String key, long def) {
        Object t = configs.get(key);
        if (t == null) {
            return def;
        }
        try {
            long v = Long.parseLong(t.toString().trim());
            if (v <= 0) {
                throw new NumberFormatException("not positive");
            }
            return v;
        } catch (NumberFormatException e) {
            throw new ConfigException(key, t, "want a positive integer");
        }
    }

    private static SSLContext sslContext(String caFile) {
        try (InputStream in = new FileInputStream(caFile)) {
            Collection<? extends Certificate> certs = CertificateFactory.getInstance("X.509").generateCertificates(in);
            if (certs.isEmpty()) {
                throw new ConfigException(CA_FILE_CONFIG, caFile, "no certificate in the file");
            }
            KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
            ks.load(null, null);
            int i = 0;
            for (Certificate c : certs) {
                ks.setCertificateEntry("ca-" + i++, c);
            }
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(ks);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            return ctx;
        } catch (IOException | GeneralSecurityException e) {
            throw new ConfigException(CA_FILE_CONFIG, caFile, "cannot read a PEM CA: " + e.getMessage());
        }
    }

    @Override
    public void validate(RequestMetadata md) throws PolicyViolationException {
        if (INTERNAL_TOPICS.contains(md.topic())) {
            log.info("kafka-disk-guard admits Kafka's internal topic {} without asking", md.topic());
            return;
        }
        if (exemptTopics.contains(md.topic())) {
            // Write protection must never wait for admission (the guard's spec R8.4).
            log.info("kafka-disk-guard admits its ownership topic {} without asking", md.topic());
            return;
        }
        long now = System.nanoTime();
        if (!breaker.allows(now)) {
            fallback(md.topic(), "not asked: the guard failed " + "repeatedly; next try in "
                + TimeUnit.NANOSECONDS.toMillis(breaker.retryInNanos(now)) + " ms");
            return;
        }
        long wait = Math.min(timeoutNanos, budget.remainingNanos(now));
        if (wait < MIN_WAIT_NANOS) {
            fallback(md.topic(), "not asked: the controller already waited " + budgetMs + " ms for the guard within "
                + windowMs + " ms (" + BUDGET_CONFIG + ")");
            return;
        }
        HttpRequest.Builder rb = HttpRequest.newBuilder(url)
            .timeout(Duration.ofNanos(wait))
            .header("Content-Type", "application/json")
            .header(FALLBACKS_ALLOW, Long.toString(unreportedAllow.get()))
            .header(FALLBACKS_REFUSE, Long.toString(unreportedRefuse.get()))
            .POST(HttpRequest.BodyPublishers.ofString(requestJson(md), StandardCharsets.UTF_8));
        if (authorization != null) {
            rb.header("Authorization", authorization);
        }
        HttpResponse<String> res;
        CompletableFuture<HttpResponse<String>> f = client.sendAsync(rb.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        try {
            res = f.get(wait, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            failed(md.topic(), "no answer within " + TimeUnit.NANOSECONDS.toMillis(wait) + " ms");
            return;
        } catch (ExecutionException e) {
            failed(md.topic(), String.valueOf(e.getCause()));
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            failed(md.topic(), "interrupted");
            return;
        } finally {
            budget.record(now, System.nanoTime());
        }
        recorded(res, RECORDED_ALLOW, unreportedAllow);
        recorded(res, RECORDED_REFUSE, unreportedRefuse);
        if (res.statusCode() != 200) {
            failed(md.topic(), "HTTP " + res.statusCode() + ": " + errorText(res.body()));
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
            failed(md.topic(), "unreadable answer: " + e.getMessage());
            return;
        }
        if (!(allowed instanceof Boolean)) {
            failed(md.topic(), "answer without \"allowed\"");
            return;
        }
        breaker.success();
        if (!(Boolean) allowed) {
            String msg = reason instanceof String ? (String) reason : "reserved storage limit reached";
            log.info("kafka-disk-guard refused topic {}: {}", md.topic(), msg);
            throw new PolicyViolationException(msg);
        }
    }

    /** Subtracts what the guard says it recorded of our fallback report. */
    private static void recorded(HttpResponse<String> res, String header, AtomicLong unreported) {
        res.headers().firstValue(header).ifPresent(v -> {
            try {
                long n = Long.parseLong(v.trim());
                if (n > 0) {
                    unreported.updateAndGet(x -> Math.max(0, x - n));
                }
            } catch (NumberFormatException e) {
                // not a count: keep ours
            }
        });
    }

    private void failed(String topic, String why) {
        if (breaker.failure(System.nanoTime())) {
            why += "; " + breaker.failures() + " failures in a row: circuit open for "
                + TimeUnit.NANOSECONDS.toMillis(breaker.retryInNanos(System.nanoTime())) + " ms";
        }
        fallback(topic, why);
    }

    private void fallback(String topic, String why) {
        if (refuseWhenUnreachable) {
            unreportedRefuse.incrementAndGet();
            log.warn("kafka-disk-guard at {} gave no answer for topic {} ({}); refusing ({}=refuse)",
                url, topic, why, ON_UNREACHABLE_CONFIG);
            throw new PolicyViolationException("kafka-disk-guard could not check the reserved storage limit for topic "
                + topic + " (" + why + "); refused because " + ON_UNREACHABLE_CONFIG + "=refuse");
        }
        unreportedAllow.incrementAndGet();
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
