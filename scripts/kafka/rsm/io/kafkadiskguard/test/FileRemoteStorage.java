package io.kafkadiskguard.test;

import org.apache.kafka.server.log.remote.storage.LogSegmentData;
import org.apache.kafka.server.log.remote.storage.RemoteLogSegmentMetadata;
import org.apache.kafka.server.log.remote.storage.RemoteResourceNotFoundException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageException;
import org.apache.kafka.server.log.remote.storage.RemoteStorageManager;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A RemoteStorageManager for kafka-disk-guard's test brokers: "remote"
 * segments are files under a local directory (config "dir", given as
 * rsm.config.dir), one directory per uploaded segment. For tests only: no
 * durability, no concurrency control beyond the file system's.
 *
 * Topics whose name starts with "kdg-upload-fails" stand for a remote store
 * that is down: every copy of their segments fails, so they stay local.
 */
public class FileRemoteStorage implements RemoteStorageManager {
    private Path root;

    @Override
    public void configure(Map<String, ?> configs) {
        Object dir = configs.get("dir");
        if (dir == null) {
            throw new IllegalArgumentException("FileRemoteStorage needs rsm.config.dir");
        }
        root = Paths.get(dir.toString());
        try {
            Files.createDirectories(root);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private Path dir(RemoteLogSegmentMetadata m) {
        return root.resolve(m.topicIdPartition().topic() + "-" + m.topicIdPartition().partition() + "-" + m.topicIdPartition().topicId())
                .resolve(m.startOffset() + "-" + m.remoteLogSegmentId().id());
    }

    @Override
    public Optional<RemoteLogSegmentMetadata.CustomMetadata> copyLogSegmentData(RemoteLogSegmentMetadata m, LogSegmentData data) throws RemoteStorageException {
        if (m.topicIdPartition().topic().startsWith("kdg-upload-fails")) {
            throw new RemoteStorageException("remote store unavailable (test topic " + m.topicIdPartition().topic() + ")");
        }
        Path d = dir(m);
        try {
            Files.createDirectories(d);
            Files.copy(data.logSegment(), d.resolve("segment.log"), StandardCopyOption.REPLACE_EXISTING);
            Files.copy(data.offsetIndex(), d.resolve("offset.index"), StandardCopyOption.REPLACE_EXISTING);
            Files.copy(data.timeIndex(), d.resolve("time.index"), StandardCopyOption.REPLACE_EXISTING);
            if (data.transactionIndex().isPresent()) {
                Files.copy(data.transactionIndex().get(), d.resolve("txn.index"), StandardCopyOption.REPLACE_EXISTING);
            }
            Files.copy(data.producerSnapshotIndex(), d.resolve("producer.snapshot"), StandardCopyOption.REPLACE_EXISTING);
            ByteBuffer epochs = data.leaderEpochIndex().duplicate();
            byte[] b = new byte[epochs.remaining()];
            epochs.get(b);
            Files.write(d.resolve("leader-epoch.checkpoint"), b);
            return Optional.empty();
        } catch (IOException e) {
            throw new RemoteStorageException("copy " + d, e);
        }
    }

    private InputStream open(Path f, long start, long endInclusive) throws RemoteStorageException {
        try {
            byte[] all = Files.readAllBytes(f);
            int from = (int) Math.min(start, all.length);
            int to = (int) Math.min(endInclusive == Long.MAX_VALUE ? all.length : endInclusive + 1, all.length);
            return new ByteArrayInputStream(all, from, Math.max(0, to - from));
        } catch (NoSuchFileException e) {
            throw new RemoteResourceNotFoundException("no " + f, e);
        } catch (IOException e) {
            throw new RemoteStorageException("read " + f, e);
        }
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata m, int startPosition) throws RemoteStorageException {
        return open(dir(m).resolve("segment.log"), startPosition, Long.MAX_VALUE);
    }

    @Override
    public InputStream fetchLogSegment(RemoteLogSegmentMetadata m, int startPosition, int endPosition) throws RemoteStorageException {
        return open(dir(m).resolve("segment.log"), startPosition, endPosition);
    }

    @Override
    public InputStream fetchIndex(RemoteLogSegmentMetadata m, IndexType type) throws RemoteStorageException {
        String name = switch (type) {
            case OFFSET -> "offset.index";
            case TIMESTAMP -> "time.index";
            case PRODUCER_SNAPSHOT -> "producer.snapshot";
            case TRANSACTION -> "txn.index";
            case LEADER_EPOCH -> "leader-epoch.checkpoint";
        };
        return open(dir(m).resolve(name), 0, Long.MAX_VALUE);
    }

    @Override
    public void deleteLogSegmentData(RemoteLogSegmentMetadata m) throws RemoteStorageException {
        Path d = dir(m);
        if (!Files.exists(d)) {
            return;
        }
        try (Stream<Path> s = Files.walk(d)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new RemoteStorageException("delete " + d, e);
        }
    }

    @Override
    public void close() {
    }
}
