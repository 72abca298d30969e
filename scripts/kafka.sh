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
#   --no-authorizer              run without an authorizer (ACL requests answer SECURITY_DISABLED)
#   --release-version V          KDG_KAFKA_RELEASE_VERSION  format the storage at release V's
#                                metadata.version (e.g. 4.2: an older cluster, no cordoned.log.dirs)
#                                [the jars' latest production version]
#   KDG_KAFKA_CLASSPATH=a.jar:b.jar  extra jars on the broker classpath (plugins)
#
# Listeners: PLAINTEXT on 127.0.0.1:PORT (anonymous, ordinary clients),
# SASL_PLAINTEXT/PLAIN on PORT+1 with users guard/guard-secret and
# admin/admin-secret (both super users) and limited/limited-secret (not a
# super user). StandardAuthorizer with allow.everyone.if.no.acl.found=true.
#
# The jar cache lives in KDG_CACHE (default ~/.cache/kafka-disk-guard) and
# survives between runs; only Maven Central is used, through mvn.
#
# Cluster mode: NODES KRaft nodes (default 3), each a combined
# broker+controller JVM, with a static controller quorum
# (controller.quorum.voters) on loopback.
#
#   scripts/kafka.sh cluster-up [options]    format and start every node, wait until each sees all brokers
#   scripts/kafka.sh cluster-down   --dir DIR   stop every node (and unmount the tmpfs)
#   scripts/kafka.sh cluster-status --dir DIR   exit 0 when every node runs and sees all brokers
#   scripts/kafka.sh node-stop  --dir DIR --node N   stop one node (its data stays)
#   scripts/kafka.sh node-start --dir DIR --node N   start it again and wait until it answers
#
# Options for cluster-up (node N = 1..NODES):
#   --dir DIR                    KDG_KAFKA_CLUSTER_DIR  work dir; node N lives in DIR/node-N [/tmp/kdg-kafka-cluster]
#   --port N                     KDG_KAFKA_CLUSTER_PORT base port [19192]; node N uses
#                                PORT+4(N-1): PLAINTEXT, +1 SASL, +2 controller, +3 inter-broker
#   --nodes N                    number of nodes [3]
#   --allow-everyone BOOL        allow.everyone.if.no.acl.found on every node [true]
#   --node-tmpfs N=SIZE          put node N's log dir on a tmpfs of SIZE (repeatable; needs root)
#   --node-second-dir N=SIZE     give node N a second log dir, DIR/node-N/data-2, on a tmpfs of
#                                SIZE (JBOD: log.dirs=data,data-2; repeatable; needs root)
#   --node-prop N:KEY=VALUE      extra server.properties line for node N (repeatable)
#   --prop KEY=VALUE             extra server.properties line for every node (repeatable)
#   --retention-check-ms N, --file-delete-delay-ms N   as for up
#   KDG_KAFKA_CLUSTER_JVM_OPTS   JVM flags per node [-Xms128m -Xmx384m -XX:TieredStopAtLevel=1]
#                                (C1 only: about half the CPU to start, slower at full load)
#
# Every node: the same listeners as the single broker (PLAINTEXT anonymous,
# SASL_PLAINTEXT/PLAIN with guard, admin and the non-super user
# limited/limited-secret), StandardAuthorizer, and inter-broker and
# controller traffic on SASL_PLAINTEXT as User:broker, a super user, so
# ordinary clients stay subject to ACLs whatever allow.everyone says. The
# log dir is DIR/node-N/data (meta.properties, partitions); the metadata
# log is in DIR/node-N/meta, so a full data tmpfs leaves the quorum alone.
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
RELEASE_VERSION=${KDG_KAFKA_RELEASE_VERSION:-}
AUTHORIZER=org.apache.kafka.metadata.authorizer.StandardAuthorizer
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
      --no-authorizer) AUTHORIZER=; shift ;;
      --release-version) RELEASE_VERSION=$2; shift 2 ;;
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
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_guard="guard-secret" user_admin="admin-secret" user_limited="limited-secret";
authorizer.class.name=$AUTHORIZER
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
    ${RELEASE_VERSION:+--release-version "$RELEASE_VERSION"} -c "$DIR/server.properties" > "$DIR/logs/format.log" 2>&1 || { cat "$DIR/logs/format.log" >&2; die "storage format failed"; }

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

# ---- cluster mode -------------------------------------------------------

CDIR=${KDG_KAFKA_CLUSTER_DIR:-/tmp/kdg-kafka-cluster}
CPORT=${KDG_KAFKA_CLUSTER_PORT:-19192}
NODES=3
NODE=
ALLOW_EVERYONE=true
NODE_TMPFS=()
NODE_SECOND=()
NODE_PROPS=()
CLUSTER_PROPS=()

parse_cluster() {
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) CDIR=$2; shift 2 ;;
      --port) CPORT=$2; shift 2 ;;
      --nodes) NODES=$2; shift 2 ;;
      --node) NODE=$2; shift 2 ;;
      --allow-everyone) ALLOW_EVERYONE=$2; shift 2 ;;
      --node-tmpfs) NODE_TMPFS+=("$2"); shift 2 ;;
      --node-second-dir) NODE_SECOND+=("$2"); shift 2 ;;
      --node-prop) NODE_PROPS+=("$2"); shift 2 ;;
      --prop) CLUSTER_PROPS+=("$2"); shift 2 ;;
      --retention-check-ms) RETENTION_CHECK_MS=$2; shift 2 ;;
      --file-delete-delay-ms) FILE_DELETE_DELAY_MS=$2; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
  case "$ALLOW_EVERYONE" in true|false) ;; *) die "--allow-everyone: want true or false, got $ALLOW_EVERYONE" ;; esac
  [[ "$NODES" =~ ^[1-9][0-9]*$ ]] || die "--nodes: want a positive number, got $NODES"
}

# cluster.env in the work dir remembers the layout for the other commands.
load_cluster() {
  [ -f "$CDIR/cluster.env" ] || die "no cluster in $CDIR (cluster.env missing)"
  # shellcheck disable=SC1091
  . "$CDIR/cluster.env"
}

node_dir() { echo "$CDIR/node-$1"; }
node_port() { echo $((CPORT + 4 * ($1 - 1))); }
node_running() { local d; d=$(node_dir "$1"); [ -f "$d/broker.pid" ] && kill -0 "$(cat "$d/broker.pid")" 2>/dev/null; }

# node_answers N: node N returns metadata listing every broker of the cluster.
node_answers() {
  local port; port=$(node_port "$1")
  if command -v kcat >/dev/null 2>&1; then
    kcat -b "127.0.0.1:$port" -L -m 2 2>/dev/null | grep -q "^ $NODES brokers:"
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null
  fi
}

node_launch() {
  local n=$1 d java; d=$(node_dir "$n"); java=$(java_bin)
  local cp="$LIBS/*${KDG_KAFKA_CLASSPATH:+:$KDG_KAFKA_CLASSPATH}"
  # shellcheck disable=SC2086
  nohup "$java" ${KDG_KAFKA_CLUSTER_JVM_OPTS:--Xms128m -Xmx384m -XX:TieredStopAtLevel=1} -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$here/kafka/log4j2.properties" -Dkafka.logs.dir="$d/logs" \
    -cp "$cp" kafka.Kafka "$d/server.properties" >> "$d/logs/stdout.log" 2>&1 < /dev/null &
  echo $! > "$d/broker.pid"
}

# wait_nodes N...: wait until each node answers; fail with its log otherwise.
wait_nodes() {
  local deadline=$((SECONDS + ${KDG_KAFKA_START_TIMEOUT:-120})) n pending
  while :; do
    pending=()
    for n in "$@"; do
      node_running "$n" || { tail -n 40 "$(node_dir "$n")/logs/server.log" >&2 2>/dev/null || true; die "node $n exited during start (logs in $(node_dir "$n")/logs)"; }
      node_answers "$n" || pending+=("$n")
    done
    [ ${#pending[@]} -eq 0 ] && return 0
    if [ $SECONDS -ge $deadline ]; then
      tail -n 40 "$(node_dir "${pending[0]}")/logs/server.log" >&2 2>/dev/null || true
      die "nodes ${pending[*]} did not see all $NODES brokers in time"
    fi
    sleep 0.3
  done
}

node_stop() {
  local n=$1 d pid; d=$(node_dir "$n")
  [ -f "$d/broker.pid" ] || return 0
  pid=$(cat "$d/broker.pid")
  kill -TERM "$pid" 2>/dev/null || true
  local deadline=$((SECONDS + ${2:-30}))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  rm -f "$d/broker.pid"
}

cluster_up() {
  fetch
  if [ -f "$CDIR/cluster.env" ]; then
    ( load_cluster; for n in $(seq 1 "$NODES"); do ! node_running "$n" || exit 1; done ) || die "a cluster already runs from $CDIR"
  fi
  local java; java=$(java_bin)
  local n d size tmpfs p voters=""
  for n in $(seq 1 "$NODES"); do voters+="${voters:+,}$n@127.0.0.1:$(( $(node_port "$n") + 2 ))"; done
  mkdir -p "$CDIR"
  # A cluster id is 16 random bytes, URL-safe base64 without padding. One
  # that starts with '-' reads as an option to kafka-storage (Kafka's own
  # random ids never start with one), so draw again.
  local id=-
  while [ "${id#-}" != "$id" ]; do id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n'); done
  local rf=$(( NODES < 3 ? NODES : 3 ))
  for n in $(seq 1 "$NODES"); do
    d=$(node_dir "$n")
    for p in data data-2; do
      if mountpoint -q "$d/$p" 2>/dev/null; then umount "$d/$p" || die "cannot unmount old tmpfs at $d/$p"; fi
    done
    rm -rf "$d"; mkdir -p "$d/data" "$d/meta" "$d/logs"
    tmpfs=""
    for size in "${NODE_TMPFS[@]+"${NODE_TMPFS[@]}"}"; do [ "${size%%=*}" = "$n" ] && tmpfs=${size#*=}; done
    if [ -n "$tmpfs" ]; then
      mount -t tmpfs -o "size=$tmpfs,mode=0755" "kdg-kafka-node-$n" "$d/data" || die "cannot mount a tmpfs of $tmpfs at $d/data (needs root)"
    fi
    local logdirs="$d/data" second=""
    for size in "${NODE_SECOND[@]+"${NODE_SECOND[@]}"}"; do [ "${size%%=*}" = "$n" ] && second=${size#*=}; done
    if [ -n "$second" ]; then
      mkdir -p "$d/data-2"
      mount -t tmpfs -o "size=$second,mode=0755" "kdg-kafka-node-$n-2" "$d/data-2" || die "cannot mount a tmpfs of $second at $d/data-2 (needs root)"
      logdirs+=",$d/data-2"
    fi
    local port; port=$(node_port "$n")
    local sasl=$((port + 1)) ctrl=$((port + 2)) internal=$((port + 3))
    local broker_jaas='org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" user_broker="broker-secret";'
    cat > "$d/server.properties" <<PROPS
process.roles=broker,controller
node.id=$n
controller.quorum.voters=$voters
listeners=PLAINTEXT://127.0.0.1:$port,SASL_PLAINTEXT://127.0.0.1:$sasl,CONTROLLER://127.0.0.1:$ctrl,INTERNAL://127.0.0.1:$internal
advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_PLAINTEXT://127.0.0.1:$sasl,INTERNAL://127.0.0.1:$internal
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT
inter.broker.listener.name=INTERNAL
controller.listener.names=CONTROLLER
sasl.enabled.mechanisms=PLAIN
sasl.mechanism.inter.broker.protocol=PLAIN
sasl.mechanism.controller.protocol=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_guard="guard-secret" user_admin="admin-secret" user_limited="limited-secret";
listener.name.internal.plain.sasl.jaas.config=$broker_jaas
listener.name.controller.plain.sasl.jaas.config=$broker_jaas
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:guard;User:admin;User:broker
allow.everyone.if.no.acl.found=$ALLOW_EVERYONE
log.dirs=$logdirs
metadata.log.dir=$d/meta
num.partitions=1
offsets.topic.replication.factor=$rf
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=$rf
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
log.retention.check.interval.ms=$RETENTION_CHECK_MS
log.segment.delete.delay.ms=$FILE_DELETE_DELAY_MS
log.initial.task.delay.ms=0
PROPS
    for p in "${CLUSTER_PROPS[@]+"${CLUSTER_PROPS[@]}"}"; do echo "$p" >> "$d/server.properties"; done
    for p in "${NODE_PROPS[@]+"${NODE_PROPS[@]}"}"; do [ "${p%%:*}" = "$n" ] && echo "${p#*:}" >> "$d/server.properties"; done
  done
  cat > "$CDIR/cluster.env" <<ENV
NODES=$NODES
CPORT=$CPORT
CLUSTER_ID=$id
ENV
  local cp="$LIBS/*${KDG_KAFKA_CLASSPATH:+:$KDG_KAFKA_CLASSPATH}" pids=()
  for n in $(seq 1 "$NODES"); do
    d=$(node_dir "$n")
    "$java" -cp "$cp" -Dlog4j2.configurationFile="$here/kafka/log4j2.properties" -Dkafka.logs.dir="$d/logs" \
      kafka.tools.StorageTool format -t "$id" -c "$d/server.properties" > "$d/logs/format.log" 2>&1 &
    pids+=($!)
  done
  for n in $(seq 1 "$NODES"); do
    wait "${pids[$((n - 1))]}" || { cat "$(node_dir "$n")/logs/format.log" >&2; cluster_down; die "storage format of node $n failed"; }
  done
  for n in $(seq 1 "$NODES"); do node_launch "$n"; done
  wait_nodes $(seq 1 "$NODES") || { cluster_down; exit 1; }
  echo "kafka.sh: Apache Kafka $KAFKA_VERSION cluster $id up: $NODES nodes, PLAINTEXT 127.0.0.1:$CPORT (+4 per node), log dirs $CDIR/node-N/data" >&2
}

cluster_down() {
  [ -f "$CDIR/cluster.env" ] || return 0
  load_cluster
  local n d
  # Stop every node at once. A node's controlled shutdown waits for a
  # quorum that is going away too: after 3 s it is killed (cluster-up
  # formats a new cluster, nothing of this one is kept).
  for n in $(seq 1 "$NODES"); do node_stop "$n" 3 & done
  wait
  for n in $(seq 1 "$NODES"); do
    d=$(node_dir "$n")
    for p in data data-2; do
      if mountpoint -q "$d/$p" 2>/dev/null; then umount "$d/$p" 2>/dev/null || umount -l "$d/$p" || true; fi
    done
  done
}

cluster_status() {
  load_cluster
  local n
  for n in $(seq 1 "$NODES"); do node_running "$n" && node_answers "$n" || return 1; done
}

node_cmd() {
  load_cluster
  [[ "$NODE" =~ ^[0-9]+$ ]] && [ "$NODE" -ge 1 ] && [ "$NODE" -le "$NODES" ] || die "--node: want 1..$NODES, got '$NODE'"
  case "$1" in
    stop) node_stop "$NODE" ;;
    start)
      node_running "$NODE" && die "node $NODE already runs"
      fetch
      node_launch "$NODE"
      wait_nodes "$NODE" ;;
  esac
}

cmd=${1:-}; [ $# -gt 0 ] && shift
case "$cmd" in
  fetch) fetch; build_rsm; echo "$LIBS" ;;
  tool) fetch; cls=$1; shift; exec "$(java_bin)" -Dlog4j2.configurationFile="$here/kafka/log4j2.properties" -Dkafka.logs.dir="${TMPDIR:-/tmp}" -cp "$LIBS/*" "$cls" "$@" ;;
  up) parse "$@"; up ;;
  down) parse "$@"; down ;;
  status) parse "$@"; running && answers ;;
  version) echo "$KAFKA_VERSION" ;;
  cluster-up) parse_cluster "$@"; cluster_up ;;
  cluster-down) parse_cluster "$@"; cluster_down ;;
  cluster-status) parse_cluster "$@"; cluster_status ;;
  node-stop) parse_cluster "$@"; node_cmd stop ;;
  node-start) parse_cluster "$@"; node_cmd start ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
