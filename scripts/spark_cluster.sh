#!/usr/bin/env bash
# A Spark standalone cluster on loopback only: one master and two workers started from the
# jars of the pyspark wheel. `start` waits until both workers have registered and records
# the pids it started; `stop` stops exactly those pids.
#   bash scripts/spark_cluster.sh start|stop|status   (state in $SIZED_CLUSTER_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/pids.sh
STATE=${SIZED_CLUSTER_DIR:-$PWD/.spark-cluster}
PORT=${SIZED_CLUSTER_PORT:-7077}
WORKERS=${SIZED_CLUSTER_WORKERS:-2}
PY=${PYTHON:-$PWD/.venv/bin/python}
export SPARK_HOME=${SPARK_HOME:-$("$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}
export SPARK_LOCAL_IP=127.0.0.1 SPARK_MASTER_HOST=127.0.0.1
export PYSPARK_PYTHON=$PY
export SPARK_LOG_DIR=$STATE/logs SPARK_WORKER_DIR=$STATE/work

start() {
  if pids_alive "$STATE/pids"; then
    echo "cluster already running: spark://127.0.0.1:$PORT"; return 0
  fi
  mkdir -p "$SPARK_LOG_DIR" "$SPARK_WORKER_DIR"; : > "$STATE/pids"
  nohup "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host 127.0.0.1 --port "$PORT" --webui-port 0 > "$SPARK_LOG_DIR/master.log" 2>&1 &
  echo $! >> "$STATE/pids"
  for i in $(seq 1 "$WORKERS"); do
    nohup "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
        "spark://127.0.0.1:$PORT" --host 127.0.0.1 --cores 1 --memory 2g --webui-port 0 \
        --work-dir "$SPARK_WORKER_DIR/$i" > "$SPARK_LOG_DIR/worker$i.log" 2>&1 &
    echo $! >> "$STATE/pids"
  done
  for _ in $(seq 1 120); do
    registered=$(grep -c "Registering worker" "$SPARK_LOG_DIR/master.log" 2>/dev/null || true)
    if [ "${registered:-0}" -ge "$WORKERS" ]; then
      echo "cluster up: spark://127.0.0.1:$PORT with $WORKERS workers (pids $(tr '\n' ' ' < "$STATE/pids"))"
      return 0
    fi
    sleep 1
  done
  echo "workers did not register within 120s; see $SPARK_LOG_DIR" >&2
  stop; return 1
}

stop() {
  [ -f "$STATE/pids" ] || return 0
  stop_pids "$STATE/pids"; echo "cluster stopped"
}

status() {
  if pids_alive "$STATE/pids"; then
    echo "running: spark://127.0.0.1:$PORT"; else echo "not running"; return 1; fi
}

"${1:-status}"
