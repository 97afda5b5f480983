#!/usr/bin/env bash
# A Hive metastore service on 127.0.0.1, the production shape of a shared catalog: the
# metastore server class the pyspark wheel ships (org.apache.hadoop.hive.metastore.HiveMetaStore,
# Hive 2.3) backed by a PostgreSQL server of its own (Debian's postgresql and its JDBC driver,
# installed when missing). `start` waits until the service answers and prints its thrift URI
# as its last line; `stop` stops exactly the two processes it started (by their pids).
#   bash scripts/metastore.sh start|stop|status   (state in $SIZED_METASTORE_DIR)
# Point a profile at it: server_side_parameters: {spark.hadoop.hive.metastore.uris: <uri>}.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/pids.sh
STATE=${SIZED_METASTORE_DIR:-$PWD/.metastore}
PORT=${SIZED_METASTORE_PORT:-9083}
PG_PORT=${SIZED_METASTORE_PG_PORT:-5433}
PY=${PYTHON:-$PWD/.venv/bin/python}
export SPARK_HOME=${SPARK_HOME:-$("$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}
export SPARK_LOCAL_IP=127.0.0.1
JDBC_JAR=/usr/share/java/postgresql.jar
trap 'echo "metastore.sh: failed at line $LINENO (logs in $STATE)" >&2' ERR

install_missing() {
  if ! ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || [ ! -f "$JDBC_JAR" ]; then
    [ "$(id -u)" = 0 ] || { echo "needs postgresql and libpostgresql-jdbc-java (apt-get install as root)" >&2; exit 1; }
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql libpostgresql-jdbc-java >/dev/null
  fi
  PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
}

# PostgreSQL refuses to run as root: as root, its server runs as the postgres user, with its
# data directory where that user can reach it (recorded in $STATE/pg_dir).
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

pg_dir() {
  if [ -f "$STATE/pg_dir" ]; then cat "$STATE/pg_dir"; return; fi
  local dir="$STATE/pg"
  if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$STATE"; then
    dir=$(mktemp -d /tmp/sized-metastore-pg.XXXXXX)
  fi
  mkdir -p "$dir"; if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
  echo "$dir" > "$STATE/pg_dir"; echo "$dir"
}

# Hive 2.3's model classes (package.jdo of hive-metastore-2.3.x, the jar pyspark 3.5 and 4
# ship). Their tables are created at start-up, in one thread: created lazily, two requests'
# schema changes deadlock in PostgreSQL (ALTER TABLE ... ADD CONSTRAINT waits on a table
# another request's open transaction holds).
MODEL_CLASSES="org.apache.hadoop.hive.metastore.model.MDatabase,org.apache.hadoop.hive.metastore.model.MFieldSchema,org.apache.hadoop.hive.metastore.model.MType,org.apache.hadoop.hive.metastore.model.MTable,org.apache.hadoop.hive.metastore.model.MConstraint,org.apache.hadoop.hive.metastore.model.MSerDeInfo,org.apache.hadoop.hive.metastore.model.MOrder,org.apache.hadoop.hive.metastore.model.MColumnDescriptor,org.apache.hadoop.hive.metastore.model.MStringList,org.apache.hadoop.hive.metastore.model.MStorageDescriptor,org.apache.hadoop.hive.metastore.model.MPartition,org.apache.hadoop.hive.metastore.model.MIndex,org.apache.hadoop.hive.metastore.model.MRole,org.apache.hadoop.hive.metastore.model.MRoleMap,org.apache.hadoop.hive.metastore.model.MGlobalPrivilege,org.apache.hadoop.hive.metastore.model.MDBPrivilege,org.apache.hadoop.hive.metastore.model.MTablePrivilege,org.apache.hadoop.hive.metastore.model.MPartitionPrivilege,org.apache.hadoop.hive.metastore.model.MTableColumnPrivilege,org.apache.hadoop.hive.metastore.model.MPartitionColumnPrivilege,org.apache.hadoop.hive.metastore.model.MPartitionEvent,org.apache.hadoop.hive.metastore.model.MMasterKey,org.apache.hadoop.hive.metastore.model.MDelegationToken,org.apache.hadoop.hive.metastore.model.MTableColumnStatistics,org.apache.hadoop.hive.metastore.model.MPartitionColumnStatistics,org.apache.hadoop.hive.metastore.model.MVersionTable,org.apache.hadoop.hive.metastore.model.MResourceUri,org.apache.hadoop.hive.metastore.model.MFunction,org.apache.hadoop.hive.metastore.model.MNotificationLog,org.apache.hadoop.hive.metastore.model.MNotificationNextId"

hive_site() {
  cat <<EOF
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:postgresql://127.0.0.1:$PG_PORT/metastore</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.postgresql.Driver</value></property>
  <property><name>javax.jdo.option.ConnectionUserName</name><value>hive</value></property>
  <property><name>javax.jdo.option.ConnectionPassword</name><value>hive</value></property>
  <property><name>datanucleus.schema.autoCreateAll</name><value>true</value></property>
  <property><name>hive.metastore.schema.verification</name><value>false</value></property>
  <property><name>hive.metastore.warehouse.dir</name><value>file://$STATE/warehouse</value></property>
  <property><name>hive.metastore.event.db.notification.api.auth</name><value>false</value></property>
  <property><name>hive.async.log.enabled</name><value>false</value></property>
  <property><name>datanucleus.autoStartMechanism</name><value>Classes</value></property>
  <property><name>datanucleus.autoStartClassNames</name><value>$MODEL_CLASSES</value></property>
</configuration>
EOF
}

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

start() {
  if pids_alive "$STATE/metastore.pid"; then
    echo "metastore already running"; echo "thrift://127.0.0.1:$PORT"; return 0
  fi
  install_missing
  mkdir -p "$STATE/conf" "$STATE/warehouse"
  PG=$(pg_dir)
  if [ ! -f "$PG/PG_VERSION" ]; then
    as_pg "$PG_BIN/initdb" -D "$PG" -U hive --auth=trust >"$STATE/initdb.log" 2>&1 \
      || { cat "$STATE/initdb.log" >&2; exit 1; }
  fi
  as_pg "$PG_BIN/pg_ctl" -D "$PG" -l "$PG/server.log" -w -t 60 start \
    -o "-p $PG_PORT -c listen_addresses=127.0.0.1 -k $PG" >/dev/null \
    || { tail -20 "$PG/server.log" >&2; exit 1; }
  if ! as_pg "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U hive -d postgres -tAc \
       "select 1 from pg_database where datname = 'metastore'" | grep -q 1; then
    as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U hive metastore
  fi
  hive_site > "$STATE/conf/hive-site.xml"
  # spark-class runs the class with the wheel's jars and the JVM options Spark needs on Java 17+
  SPARK_DIST_CLASSPATH="$STATE/conf:$JDBC_JAR" nohup "$SPARK_HOME/bin/spark-class" \
    org.apache.hadoop.hive.metastore.HiveMetaStore -p "$PORT" > "$STATE/metastore.log" 2>&1 &
  echo $! > "$STATE/metastore.pid"
  for _ in $(seq 1 180); do
    if answers; then echo "metastore up (pid $(cat "$STATE/metastore.pid"), PostgreSQL on 127.0.0.1:$PG_PORT)"
      echo "thrift://127.0.0.1:$PORT"; return 0; fi
    if ! kill -0 "$(cat "$STATE/metastore.pid")" 2>/dev/null; then break; fi
    sleep 1
  done
  echo "the metastore did not answer; see $STATE/metastore.log" >&2
  tail -20 "$STATE/metastore.log" >&2
  stop; return 1
}

stop() {
  stop_pids "$STATE/metastore.pid"
  if [ -f "$STATE/pg_dir" ] && [ -f "$(cat "$STATE/pg_dir")/postmaster.pid" ]; then
    # pg_ctl stops the server of this data directory, the one start started
    PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    as_pg "$PG_BIN/pg_ctl" -D "$(cat "$STATE/pg_dir")" -m fast -w stop >/dev/null || true
  fi
  echo "metastore stopped"
}

status() {
  if pids_alive "$STATE/metastore.pid" && answers; then
    echo "running: thrift://127.0.0.1:$PORT"; else echo "not running"; return 1; fi
}

"${1:-status}"
