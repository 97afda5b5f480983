# Sourced by the scripts that start servers (thrift_server.sh, spark_cluster.sh; the
# package's own services use python_adapter/cli/processes.py): their processes are stopped
# by the pids their `start` recorded, one per line in a file, never by name.

# Whether every pid in the file is alive.
pids_alive() { [ -f "$1" ] && [ -s "$1" ] && kill -0 $(cat "$1") 2>/dev/null; }

# TERM each pid in the file, up to 30 s for them to end, then KILL; the file removed.
stop_pids() {
  local file=$1 pid alive
  [ -f "$file" ] || return 0
  for pid in $(cat "$file"); do kill "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 30); do
    alive=0; for pid in $(cat "$file"); do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 1
  done
  for pid in $(cat "$file"); do kill -9 "$pid" 2>/dev/null || true; done
  rm -f "$file"
}
