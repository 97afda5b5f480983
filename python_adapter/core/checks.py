"""What `dbt debug` checks, judged and worded: the Java that runs Spark, the helper jar, the
warehouse, a Spark Connect server. Pure: the I/O that gathers the facts is
python_adapter/io/checks.py (and io/connect_retries.py for the server); this decides
whether a fact is a failure and says what to do about it, once, in the check's words."""
import re
from typing import NamedTuple, Optional, Tuple

OK, WARN, ERROR = "OK", "WARN", "ERROR"
# Spark 4 runs on Java 17 and 21; Spark 3.5 would take 8 and 11, but the helpers of
# io/java are compiled for 17 (fast_local_fs.JAVA_RELEASE), so 17 is the floor on both.
JAVA_MIN = 17


class Check(NamedTuple):
    """One line of `dbt debug`: `  <name>: [<status> <detail>]`; a failure's `fix` says
    what to do."""
    name: str
    status: str           # OK | WARN | ERROR
    detail: str
    fix: str = ""

    @property
    def failed(self) -> bool:
        return self.status == ERROR

    def summary(self) -> str:
        """The failure as one sentence for dbt's summary: what, then the way out."""
        return f"{self.name}: {self.detail}" + (f". {self.fix}" if self.fix else "")


class ConnectBound(NamedTuple):
    """How long a Spark Connect client waits for a server that does not answer: each
    attempt gets `timeout_s` (the profile's connect_timeout), and a failed call is tried
    `retries` times more (connect_retries), so it fails within timeout_s * (retries + 1)."""
    url: str
    timeout_s: float
    retries: int

    @property
    def limit_s(self) -> float:
        return self.timeout_s * (self.retries + 1)


_VERSION = re.compile(r'version "([^"]+)"')


def parse_java_version(text: str) -> Optional[Tuple[int, str]]:
    """(major, full version) from `java -version`'s output (`openjdk version "17.0.12"`,
    `java version "1.8.0_381"`), or None when it has none."""
    found = _VERSION.search(text or "")
    if not found:
        return None
    version = found.group(1)
    parts = re.findall(r"\d+", version)
    if not parts:
        return None
    major = int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(parts[0])
    return major, version


_JAVA_FIX = (f"Install Java {JAVA_MIN} or later (a JDK or JRE, e.g. the openjdk-{JAVA_MIN} "
             f"package) and point JAVA_HOME at it (or put its bin/ first on the PATH): "
             f"pyspark starts $JAVA_HOME/bin/java, else `java` on the PATH")


def java_check(where: str, output: Optional[str]) -> Check:
    """The verdict on the Java that starts Spark. `where` says which java and how it was
    found; `output` is what `java -version` printed, None when it could not run."""
    if output is None:
        return Check("Java", ERROR, f"no Java to start Spark: {where}", _JAVA_FIX)
    parsed = parse_java_version(output)
    if parsed is None:
        return Check("Java", ERROR, f"{where} printed no version ({output.strip()[:200]!r})",
                     _JAVA_FIX)
    major, version = parsed
    if major < JAVA_MIN:
        return Check("Java", ERROR, f"Java {version} at {where}; Spark needs Java "
                                    f"{JAVA_MIN} or later", _JAVA_FIX)
    return Check("Java", OK, f"{version} at {where}")


_WAREHOUSE_FIX = ("Make that directory writable by the user dbt runs as, or set "
                  "spark.sql.warehouse.dir in the profile's server_side_parameters to a "
                  "directory it can write (the profile `dbt init` writes keeps it under the "
                  "project: .spark/warehouse)")
_REMOTE_WAREHOUSE_FIX = ("The Spark Connect server writes the tables: make the directory "
                         "writable by the server's user, or start the server with "
                         "--conf spark.sql.warehouse.dir=<a directory it can write>")


def warehouse_check(path: str, error: Optional[str], remote: bool,
                    refused: Optional[str] = None) -> Check:
    """The verdict on a probe file created and removed under the warehouse directory
    (`error` is why it could not be, None when it was), and on the filesystem's probe for
    the commit protocol (`refused`: why it cannot run there); `remote` over Spark Connect."""
    where = f"{path} (spark.sql.warehouse.dir{', on the server' if remote else ''})"
    if error is not None:
        return Check("warehouse", ERROR, f"cannot write to {where}: {error}",
                     _REMOTE_WAREHOUSE_FIX if remote else _WAREHOUSE_FIX)
    if refused is not None:
        return Check("warehouse", ERROR, f"{where} can be written, but no sized table can "
                     f"be committed there: {refused}", _STORAGE_FIX)
    return Check("warehouse", OK, f"{where} can be written and committed to")


_STORAGE_FIX = ("Put the warehouse (or the models' location_root) on a filesystem the commit "
                "protocol supports: local disk, HDFS, or S3 through S3A with conditional "
                "writes (docs/storage.md)")


_DERBY_FIX = ("One process at a time can open an embedded Derby metastore: wait for the "
              "other dbt (or Spark) process using it to end, or share a metastore service "
              "between processes (spark.hadoop.hive.metastore.uris in server_side_parameters)")
_SERVICE_FIX = ("Check that the metastore service runs and answers at "
                "spark.hadoop.hive.metastore.uris")


def metastore_check(where: str, error: Optional[str], derby: bool) -> Check:
    """The verdict on a listing of the catalog's databases (`error` is why it failed, None
    when it worked); `derby` when the catalog is an embedded Derby database."""
    if error is None:
        return Check("metastore", OK, f"{where} answers")
    return Check("metastore", ERROR, f"cannot open {where}: {error}",
                 _DERBY_FIX if derby else _SERVICE_FIX)


_DETAILS = re.compile(r'details = "([^"]*)"')


def grpc_cause(text: str) -> str:
    """The cause in a gRPC error's text, short: `Connection refused` from `failed to
    connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:15002: Failed to connect
    to remote host: Connection refused`."""
    found = _DETAILS.search(text or "")
    if found:
        details = found.group(1)
    else:
        lines = (text or "").strip().splitlines()
        details = lines[0] if lines else ""
    return details.rsplit(": ", 1)[-1].strip() or "no answer"


def server_gone_message(bound: ConnectBound, cause: str) -> str:
    """The error of a Spark Connect server that did not answer within the profile's bound:
    the server, the cause, the way out."""
    tries = bound.retries + 1
    tried = (f"{tries} attempts, {bound.timeout_s:g} s each" if tries > 1 else
             f"within {bound.timeout_s:g} s")
    return (f"the Spark Connect server at {bound.url} does not answer ({cause}; {tried}: "
            f"connect_timeout {bound.timeout_s:g}, connect_retries {bound.retries}). Start "
            f"the server (`sized-spark serve connect start`, or your server's start command) "
            f"or check `host` in profiles.yml; raise connect_timeout or connect_retries if "
            f"it is only slow to answer")


def session_ended_message(url: str) -> str:
    """The error of a Connect session the server no longer knows (it was restarted)."""
    return (f"the Spark Connect server at {url} no longer knows this client's session (the "
            f"server was restarted or the session was closed): run the command again")
