#!/usr/bin/env bash
# A Spark Thrift server (HiveServer2 protocol, what dbt-spark's `method: thrift` talks to) on
# loopback only, started from the jars of the pyspark wheel (spark-hive-thriftserver). Its
# own work dir holds an embedded Derby metastore, the warehouse, scratch dirs and logs; the
# UI is off. `start` picks a free port (or $SIZED_THRIFT_PORT), waits until the port accepts
# connections and records the pid it started; `stop` stops exactly that pid.
#   bash scripts/thrift_server.sh start|stop|status   (state in $SIZED_THRIFT_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/pids.sh
STATE=${SIZED_THRIFT_DIR:-$PWD/.thrift-server}
PY=${PYTHON:-$PWD/.venv/bin/python}
export SPARK_HOME=${SPARK_HOME:-$("$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}
export SPARK_LOCAL_IP=127.0.0.1
export SPARK_LOG_DIR=$STATE/logs

port_open() {  # does 127.0.0.1:$1 accept a TCP connection?
  "$PY" -c 'import socket, sys
s = socket.socket(); s.settimeout(1)
sys.exit(s.connect_ex(("127.0.0.1", int(sys.argv[1]))))' "$1"
}

running() { pids_alive "$STATE/pid"; }

start() {
  if running; then
    echo "thrift server already running: 127.0.0.1:$(cat "$STATE/port") (pid $(cat "$STATE/pid"))"
    return 0
  fi
  local port=${SIZED_THRIFT_PORT:-$("$PY" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
  mkdir -p "$SPARK_LOG_DIR" "$STATE/tmp"
  echo "$port" > "$STATE/port"
  nohup "$SPARK_HOME/bin/spark-submit" \
      --class org.apache.spark.sql.hive.thriftserver.HiveThriftServer2 \
      --name sized-thrift-server \
      --master "${SIZED_THRIFT_MASTER:-local[2]}" \
      --driver-memory "${SIZED_THRIFT_MEMORY:-1g}" \
      --conf spark.driver.host=127.0.0.1 \
      --conf spark.driver.bindAddress=127.0.0.1 \
      --conf spark.ui.enabled=false \
      --conf spark.sql.shuffle.partitions=4 \
      --conf spark.local.dir="$STATE/tmp" \
      --conf spark.sql.warehouse.dir="$STATE/warehouse" \
      --conf spark.hadoop.javax.jdo.option.ConnectionURL="jdbc:derby:;databaseName=$STATE/metastore_db;create=true" \
      --conf spark.driver.extraJavaOptions="-Dderby.system.home=$STATE -Djava.io.tmpdir=$STATE/tmp" \
      --hiveconf hive.server2.thrift.bind.host=127.0.0.1 \
      --hiveconf hive.server2.thrift.port="$port" \
      --hiveconf hive.server2.transport.mode=binary \
      --hiveconf hive.exec.scratchdir="$STATE/scratch" \
      --hiveconf hive.exec.local.scratchdir="$STATE/scratch-local" \
      --hiveconf hive.downloaded.resources.dir="$STATE/resources" \
      --hiveconf hive.server2.logging.operation.log.location="$STATE/operation_logs" \
      spark-internal > "$SPARK_LOG_DIR/thrift-server.log" 2>&1 &
  echo $! > "$STATE/pid"  # spark-submit execs the JVM: this is the server's pid
  for _ in $(seq 1 180); do
    if ! running; then
      echo "thrift server exited during start; see $SPARK_LOG_DIR/thrift-server.log" >&2
      tail -n 20 "$SPARK_LOG_DIR/thrift-server.log" >&2 || true
      rm -f "$STATE/pid"; return 1
    fi
    if port_open "$port"; then
      echo "thrift server up: 127.0.0.1:$port (pid $(cat "$STATE/pid"))"
      return 0
    fi
    sleep 1
  done
  echo "thrift server did not accept connections within 180s; see $SPARK_LOG_DIR" >&2
  stop; return 1
}

stop() {
  [ -f "$STATE/pid" ] || return 0
  stop_pids "$STATE/pid"; echo "thrift server stopped"
}

status() {
  if running; then echo "running: 127.0.0.1:$(cat "$STATE/port") (pid $(cat "$STATE/pid"))"
  else echo "not running"; return 1; fi
}

"${1:-status}"
