#!/usr/bin/env bash
# A Spark Connect server on 127.0.0.1 from the installed pyspark wheel (Spark 4), with
# dbt-sized-spark's server extension (the jar of python_adapter/io/java_connect), Hive
# support and a Derby metastore of its own. `start` waits until the server answers and prints
# its sc:// URL as its last line; `stop` stops exactly the process `start` started (its pid).
#   bash scripts/connect_server.sh start|stop|status   (state in $SIZED_CONNECT_DIR)
# SIZED_CONNECT_PORT (15002), SIZED_CONNECT_WAREHOUSE (the warehouse directory),
# SIZED_CONNECT_MASTER (local[2]; a spark:// URL runs it on scripts/spark_cluster.sh's
# cluster), SIZED_METASTORE_URI (scripts/metastore.sh's service instead of Derby),
# SIZED_CONNECT_DRIVER_MEMORY (the server's --driver-memory; Spark's 1g when unset).
# A profile then says: method: connect, host: <the URL>.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/pids.sh
STATE=${SIZED_CONNECT_DIR:-$PWD/.connect-server}
PORT=${SIZED_CONNECT_PORT:-15002}
WAREHOUSE=${SIZED_CONNECT_WAREHOUSE:-$STATE/warehouse}
MASTER=${SIZED_CONNECT_MASTER:-local[2]}
PY=${PYTHON:-$PWD/.venv/bin/python}
export SPARK_HOME=${SPARK_HOME:-$("$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}
export SPARK_LOCAL_IP=127.0.0.1 PYSPARK_PYTHON=$PY
URL="sc://127.0.0.1:$PORT"

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; }

start() {
  if pids_alive "$STATE/pid"; then
    echo "$URL"; return 0
  fi
  if answers; then echo "port $PORT is taken by another process" >&2; return 1; fi
  mkdir -p "$STATE"; case "$WAREHOUSE" in /*) mkdir -p "$WAREHOUSE" ;; esac
  local jar log4j metastore=() WAREHOUSE_URI=$WAREHOUSE
  case "$WAREHOUSE" in /*) WAREHOUSE_URI="file://$WAREHOUSE" ;; esac  # a URI: as it is
  jar=$("$PY" -c 'from python_adapter.io.fast_local_fs import connect_jar; print(connect_jar())')
  log4j=$("$PY" -c 'from python_adapter.io.spark_logging import CONFIG; print(CONFIG)')
  local executors=() memory=()
  if [ -n "${SIZED_CONNECT_DRIVER_MEMORY:-}" ]; then memory=(--driver-memory "$SIZED_CONNECT_DRIVER_MEMORY"); fi
  case "$MASTER" in  # executors in their own JVMs: the jar's filesystem on their classpath
    local*) ;;
    *) executors=(--conf "spark.executor.extraClassPath=$jar" --conf spark.executor.memory=1g
                  --conf spark.cores.max=2) ;;
  esac
  if [ -n "${SIZED_METASTORE_URI:-}" ]; then
    metastore=(--conf "spark.hadoop.hive.metastore.uris=$SIZED_METASTORE_URI")
  else
    metastore=(--conf "spark.hadoop.javax.jdo.option.ConnectionURL=jdbc:derby:;databaseName=$STATE/metastore_db;create=true")
  fi
  nohup "$SPARK_HOME/bin/spark-submit" \
      --class org.apache.spark.sql.connect.service.SparkConnectServer \
      --name "Spark Connect server (dbt-sized-spark)" --master "$MASTER" \
      --jars "$jar" --driver-class-path "$jar" "${memory[@]}" \
      --conf spark.connect.extensions.relation.classes=sizedspark.connect.SizedOps \
      --conf "spark.connect.grpc.binding.port=$PORT" \
      --conf spark.connect.grpc.binding.address=127.0.0.1 \
      --conf spark.sql.catalogImplementation=hive \
      --conf "spark.sql.warehouse.dir=$WAREHOUSE_URI" \
      --conf spark.hadoop.fs.file.impl=sizedspark.fs.NioLocalFileSystem \
      --conf spark.driver.host=127.0.0.1 --conf spark.ui.enabled=false \
      --conf "spark.driver.extraJavaOptions=-Dlog4j2.configurationFile=$log4j -Dderby.system.home=$STATE" \
      "${metastore[@]}" "${executors[@]}" > "$STATE/server.log" 2>&1 &
  echo $! > "$STATE/pid"
  for _ in $(seq 1 180); do
    if answers; then echo "Spark Connect server up (pid $(cat "$STATE/pid"), log $STATE/server.log)"; echo "$URL"; return 0; fi
    if ! kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
      echo "the server exited; see $STATE/server.log" >&2; tail -20 "$STATE/server.log" >&2; rm -f "$STATE/pid"; return 1
    fi
    sleep 1
  done
  echo "the server did not answer within 180 s; see $STATE/server.log" >&2
  stop; return 1
}

stop() {
  [ -f "$STATE/pid" ] || return 0
  stop_pids "$STATE/pid"; echo "Spark Connect server stopped"
}

status() {
  if pids_alive "$STATE/pid"; then
    echo "running: $URL"; else echo "not running"; return 1; fi
}

"${1:-status}"
