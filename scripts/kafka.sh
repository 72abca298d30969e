#!/usr/bin/env bash
# A real single-node Apache Kafka broker (KRaft, combined broker+controller)
# on loopback, for development and for the integration tests.
#
#   scripts/kafka.sh fetch                 resolve the broker jars into the cache
#   scripts/kafka.sh up   [options]        format storage and start, wait until it answers
#   scripts/kafka.sh down   --dir DIR      stop it cleanly (and unmount its tmpfs)
#   scripts/kafka.sh status --dir DIR      exit 0 when it runs and answers
#   scripts/kafka.sh tool CLASS ARGS...    run a Kafka tool class (e.g. org.apache.kafka.tools.TopicCommand)
#
# Options for up (each also an environment variable):
#   --dir DIR                    KDG_KAFKA_DIR       work dir (config, pid, logs, data)   [/tmp/kdg-kafka]
#   --port N                     KDG_KAFKA_PORT      PLAINTEXT port; SASL is N+1, controller N+2 [19092]
#   --tmpfs SIZE                 KDG_KAFKA_TMPFS     put the log dir on a tmpfs of SIZE (e.g. 256m; needs root)
#   --retention-check-ms N       KDG_KAFKA_RETENTION_CHECK_MS   log.retention.check.interval.ms [300000]
#   --file-delete-delay-ms N     KDG_KAFKA_FILE_DELETE_DELAY_MS log.segment.delete.delay.ms [60000]
#                                (the broker default of the topic config file.delete.delay.ms)
#   --prop KEY=VALUE             extra server.properties line (repeatable)
#   --tiered                     KDG_KAFKA_TIERED=1  tiered storage (KIP-405): a test
#                                RemoteStorageManager (scripts/kafka/rsm, built with javac and
#                                cached) keeps "remote" segments under DIR/remote; Kafka's default
#                                topic-based metadata manager; copies checked every second
#   KDG_KAFKA_CLASSPATH=a.jar:b.jar  extra jars on the broker classpath (plugins)
#
# Listeners: PLAINTEXT on 127.0.0.1:PORT (anonymous, ordinary clients),
# SASL_PLAINTEXT/PLAIN on PORT+1 with users guard/guard-secret and
# admin/admin-secret (both super users). StandardAuthorizer with
# allow.everyone.if.no.acl.found=true.
#
# The jar cache lives in KDG_CACHE (default ~/.cache/kafka-disk-guard) and
# survives between runs; only Maven Central is used, through mvn.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KAFKA_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/kafka/pom.xml")
CACHE=${KDG_CACHE:-$HOME/.cache/kafka-disk-guard}
POM_HASH=$(sha256sum "$here/kafka/pom.xml" | cut -c1-12)
LIBS=$CACHE/kafka-$KAFKA_VERSION-$POM_HASH/libs

# The test RemoteStorageManager: Kafka's own LocalTieredStorage (in
# kafka-storage's test jar) is not published for 4.4.0, and 4.3.1's does not
# load in a 4.4 broker (it uses classes 4.4 moved), so a small file-system
# one is built from scripts/kafka/rsm against the broker's jars.
RSM_SRC=$here/kafka/rsm
RSM_JAR=$CACHE/rsm-$KAFKA_VERSION-$(cat "$RSM_SRC"/io/kafkadiskguard/test/*.java | sha256sum | cut -c1-12)/kdg-test-rsm.jar

die() { echo "kafka.sh: $*" >&2; exit 1; }

java_bin() {
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then echo "$JAVA_HOME/bin/java"; return; fi
  command -v java >/dev/null 2>&1 || die "no java on PATH (Kafka $KAFKA_VERSION needs Java 17 or newer)"
  command -v java
}

fetch() {
  if [ -f "$LIBS/.complete" ]; then return 0; fi
  command -v mvn >/dev/null 2>&1 || die "mvn is not installed: it fetches the broker jars from Maven Central"
  echo "kafka.sh: resolving Apache Kafka $KAFKA_VERSION into $LIBS" >&2
  rm -rf "$LIBS"; mkdir -p "$LIBS"
  mvn -q -B -f "$here/kafka/pom.xml" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$LIBS" >&2 || die "mvn could not resolve kafka_2.13:$KAFKA_VERSION"
  ls "$LIBS"/kafka_2.13-"$KAFKA_VERSION".jar >/dev/null 2>&1 || die "kafka_2.13-$KAFKA_VERSION.jar missing after mvn"
  touch "$LIBS/.complete"
}

build_rsm() {
  if [ -f "$RSM_JAR" ]; then return 0; fi
  fetch
  local java; java=$(java_bin)
  local jdk; jdk=$(dirname "$java")
  local javac=$jdk/javac jar=$jdk/jar
  [ -x "$javac" ] || javac=$(command -v javac) || die "no javac: the tiered storage test plugin is built from source"
  [ -x "$jar" ] || jar=$(command -v jar) || die "no jar tool"
  local out; out=$(mktemp -d)
  "$javac" -d "$out/classes" -cp "$LIBS/*" "$RSM_SRC"/io/kafkadiskguard/test/*.java >&2 || die "building the test RemoteStorageManager failed"
  mkdir -p "$(dirname "$RSM_JAR")"
  "$jar" cf "$RSM_JAR.tmp" -C "$out/classes" . && mv "$RSM_JAR.tmp" "$RSM_JAR"
  rm -rf "$out"
}

DIR=${KDG_KAFKA_DIR:-/tmp/kdg-kafka}
PORT=${KDG_KAFKA_PORT:-19092}
TMPFS=${KDG_KAFKA_TMPFS:-}
RETENTION_CHECK_MS=${KDG_KAFKA_RETENTION_CHECK_MS:-300000}
FILE_DELETE_DELAY_MS=${KDG_KAFKA_FILE_DELETE_DELAY_MS:-60000}
TIERED=${KDG_KAFKA_TIERED:-}
EXTRA_PROPS=()

parse() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) DIR=$2; shift 2 ;;
      --port) PORT=$2; shift 2 ;;
      --tmpfs) TMPFS=$2; shift 2 ;;
      --retention-check-ms) RETENTION_CHECK_MS=$2; shift 2 ;;
      --file-delete-delay-ms) FILE_DELETE_DELAY_MS=$2; shift 2 ;;
      --prop) EXTRA_PROPS+=("$2"); shift 2 ;;
      --tiered) TIERED=1; shift ;;
      *) die "unknown option $1" ;;
    esac
  done
}

# answers: true when a TCP connection to 127.0.0.1:PORT succeeds and the
# broker returns metadata (kcat when installed, bash's /dev/tcp otherwise).
answers() {
  if command -v kcat >/dev/null 2>&1; then
    kcat -b "127.0.0.1:$PORT" -L -m 2 >/dev/null 2>&1
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null
  fi
}

running() { [ -f "$DIR/broker.pid" ] && kill -0 "$(cat "$DIR/broker.pid")" 2>/dev/null; }

up() {
  fetch
  running && die "a broker already runs from $DIR (pid $(cat "$DIR/broker.pid"))"
  local java; java=$(java_bin)
  mkdir -p "$DIR"
  local data=$DIR/data
  if mountpoint -q "$data" 2>/dev/null; then umount "$data" || die "cannot unmount old tmpfs at $data"; fi
  rm -rf "$data" "$DIR/logs"; mkdir -p "$data" "$DIR/logs"
  if [ -n "$TMPFS" ]; then
    mount -t tmpfs -o "size=$TMPFS,mode=0755" kdg-kafka "$data" || die "cannot mount a tmpfs of $TMPFS at $data (needs root)"
  fi
  local sasl=$((PORT + 1)) ctrl=$((PORT + 2))
  cat > "$DIR/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$ctrl
listeners=PLAINTEXT://127.0.0.1:$PORT,SASL_PLAINTEXT://127.0.0.1:$sasl,CONTROLLER://127.0.0.1:$ctrl
advertised.listeners=PLAINTEXT://127.0.0.1:$PORT,SASL_PLAINTEXT://127.0.0.1:$sasl
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_guard="guard-secret" user_admin="admin-secret";
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:guard;User:admin
allow.everyone.if.no.acl.found=true
log.dirs=$data
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
log.retention.check.interval.ms=$RETENTION_CHECK_MS
log.segment.delete.delay.ms=$FILE_DELETE_DELAY_MS
log.initial.task.delay.ms=0
EOF
  local cp="$LIBS/*${KDG_KAFKA_CLASSPATH:+:$KDG_KAFKA_CLASSPATH}"
  if [ -n "$TIERED" ]; then
    build_rsm
    mkdir -p "$DIR/remote"
    cp="$cp:$RSM_JAR"
    cat >> "$DIR/server.properties" <<EOF
remote.log.storage.system.enable=true
remote.log.storage.manager.class.name=io.kafkadiskguard.test.FileRemoteStorage
rsm.config.dir=$DIR/remote
remote.log.metadata.manager.listener.name=PLAINTEXT
rlmm.config.remote.log.metadata.topic.replication.factor=1
rlmm.config.remote.log.metadata.topic.num.partitions=1
remote.log.manager.task.interval.ms=1000
EOF
  fi
  local p
  for p in "${EXTRA_PROPS[@]+"${EXTRA_PROPS[@]}"}"; do echo "$p" >> "$DIR/server.properties"; done

  "$java" -cp "$cp" -Dlog4j2.configurationFile="$here/kafka/log4j2.properties" -Dkafka.logs.dir="$DIR/logs" \
    kafka.tools.StorageTool format --standalone -t "$("$java" -cp "$cp" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n1)" \
    -c "$DIR/server.properties" > "$DIR/logs/format.log" 2>&1 || { cat "$DIR/logs/format.log" >&2; die "storage format failed"; }

  nohup "$java" -Xms256m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$here/kafka/log4j2.properties" -Dkafka.logs.dir="$DIR/logs" \
    -cp "$cp" kafka.Kafka "$DIR/server.properties" > "$DIR/logs/stdout.log" 2>&1 < /dev/null &
  echo $! > "$DIR/broker.pid"

  local deadline=$((SECONDS + ${KDG_KAFKA_START_TIMEOUT:-90}))
  until answers; do
    if ! running; then
      tail -n 40 "$DIR/logs/server.log" "$DIR/logs/stdout.log" >&2 2>/dev/null || true
      die "broker exited during start (logs in $DIR/logs)"
    fi
    [ $SECONDS -lt $deadline ] || { tail -n 40 "$DIR/logs/server.log" >&2 || true; down; die "broker did not answer on 127.0.0.1:$PORT in time"; }
    sleep 0.3
  done
  echo "kafka.sh: Apache Kafka $KAFKA_VERSION up: PLAINTEXT 127.0.0.1:$PORT, SASL_PLAINTEXT 127.0.0.1:$sasl, log dir $data${TMPFS:+ (tmpfs $TMPFS)}${TIERED:+, tiered storage in $DIR/remote}" >&2
}

down() {
  if running; then
    local pid; pid=$(cat "$DIR/broker.pid")
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 30))
    while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$DIR/broker.pid"
  if mountpoint -q "$DIR/data" 2>/dev/null; then umount "$DIR/data" 2>/dev/null || umount -l "$DIR/data" || true; fi
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case "$cmd" in
  fetch) fetch; build_rsm; echo "$LIBS" ;;
  tool) fetch; cls=$1; shift; exec "$(java_bin)" -Dlog4j2.configurationFile="$here/kafka/log4j2.properties" -Dkafka.logs.dir="${TMPDIR:-/tmp}" -cp "$LIBS/*" "$cls" "$@" ;;
  up) parse "$@"; up ;;
  down) parse "$@"; down ;;
  status) parse "$@"; running && answers ;;
  version) echo "$KAFKA_VERSION" ;;
  *) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
