"""What `dbt debug` says of each check (python_adapter/core/checks.py): the Java version as
`java -version` prints it, the verdicts and their fixes, the bound a Spark Connect client
waits for a server, and the messages of a server that does not answer. The I/O that gathers
the facts runs in tests/functional/dbt/test_init_and_debug.py."""
import pytest

from python_adapter.core.checks import (ERROR, JAVA_MIN, OK, Check, ConnectBound, grpc_cause,
                                        java_check, metastore_check, parse_java_version,
                                        server_gone_message, session_ended_message,
                                        warehouse_check)

# What the Java builds print on stderr for `java -version` (Debian's OpenJDK 17, Oracle's 8)
OPENJDK_17 = ('openjdk version "17.0.15" 2025-04-15\n'
              'OpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)\n'
              'OpenJDK 64-Bit Server VM (build 17.0.15+6-Debian-1deb12u1, mixed mode, sharing)\n')
ORACLE_8 = ('java version "1.8.0_381"\n'
            'Java(TM) SE Runtime Environment (build 1.8.0_381-b09)\n'
            'Java HotSpot(TM) 64-Bit Server VM (build 25.381-b09, mixed mode)\n')
# pyspark's error for a closed port, as a Connect client raises it (python_adapter/io/
# connect_retries.py words it)
REFUSED = ('<_InactiveRpcError of RPC that terminated with:\n'
           '\tstatus = StatusCode.UNAVAILABLE\n'
           '\tdetails = "failed to connect to all addresses; last error: UNKNOWN: '
           'ipv4:127.0.0.1:15999: Failed to connect to remote host: Connection refused"\n'
           '\tdebug_error_string = "UNAVAILABLE:failed to connect to all addresses"\n>')
JAVA_FIX = "Install Java 17 or later"
WAREHOUSE = "/srv/dbt/.spark/warehouse"


@pytest.mark.parametrize("output, parsed", [
    (OPENJDK_17, (17, "17.0.15")),
    (ORACLE_8, (8, "1.8.0_381")),  # the old scheme: 1.<major>
    ('openjdk version "21" 2023-09-19', (21, "21")),
    ('openjdk version "11.0.2" 2019-01-15', (11, "11.0.2")),
    ('version "17.0.12"', (17, "17.0.12")),  # the running JVM's, as io/checks.py puts it
])
def test_the_major_version_is_read_from_java_version(output, parsed):
    assert parse_java_version(output) == parsed


@pytest.mark.parametrize("output", ["", None, "bash: java: command not found",
                                    'openjdk version "" 2025'])
def test_output_without_a_version_parses_to_none(output):
    assert parse_java_version(output) is None


def test_java_17_passes_and_says_which_java():
    check = java_check("/usr/lib/jvm/java-17/bin/java (PATH)", OPENJDK_17)
    assert check == Check("Java", OK, "17.0.15 at /usr/lib/jvm/java-17/bin/java (PATH)")
    assert not check.failed


def test_java_8_fails_naming_its_version_and_the_fix():
    check = java_check("/opt/java8/bin/java (JAVA_HOME)", ORACLE_8)
    assert check.failed
    assert check.detail == ("Java 1.8.0_381 at /opt/java8/bin/java (JAVA_HOME); Spark needs "
                            f"Java {JAVA_MIN} or later")
    assert check.fix.startswith(JAVA_FIX)
    assert "JAVA_HOME" in check.fix


def test_java_11_is_below_the_floor_of_the_helpers():
    # Spark 3.5 would run on 11, but the helper jar is compiled for 17 (JAVA_MIN)
    assert java_check("java (PATH)", 'openjdk version "11.0.2"').failed


def test_no_java_fails_with_where_it_was_looked_for():
    where = "JAVA_HOME is not set and there is no `java` on the PATH"
    check = java_check(where, None)
    assert (check.status, check.detail) == (ERROR, f"no Java to start Spark: {where}")
    assert check.fix.startswith(JAVA_FIX)


def test_a_java_that_prints_no_version_is_quoted():
    check = java_check("/usr/bin/java (PATH)", "Error: could not open `lib/jvm.cfg'\n")
    assert check.failed
    assert check.detail == "/usr/bin/java (PATH) printed no version (\"Error: could not open " \
                           "`lib/jvm.cfg'\")"
    assert check.fix.startswith(JAVA_FIX)


def test_a_failure_summary_is_the_check_its_detail_and_its_fix():
    check = Check("warehouse", ERROR, "cannot write", "Make it writable")
    assert check.summary() == "warehouse: cannot write. Make it writable"
    assert Check("Java", ERROR, "no Java").summary() == "Java: no Java"


@pytest.mark.parametrize("timeout, retries, limit", [(10, 0, 10), (2, 1, 4), (2.5, 3, 10)])
def test_the_connect_bound_is_every_attempt_its_timeout(timeout, retries, limit):
    assert ConnectBound("sc://h:15002", timeout, retries).limit_s == limit


def test_a_writable_warehouse_passes():
    check = warehouse_check(WAREHOUSE, None, remote=False)
    assert check == Check("warehouse", OK, f"{WAREHOUSE} (spark.sql.warehouse.dir) can be "
                                           "written and committed to")


def test_a_warehouse_the_commit_protocol_refuses_says_why_and_where_it_can_run():
    why = "cannot commit to gs://b (the table's lock gs://b/w/.sized-debug-lock): gs is ..."
    check = warehouse_check("gs://b/w", None, remote=False, refused=why)
    assert check.failed
    assert check.detail == ("gs://b/w (spark.sql.warehouse.dir) can be written, but no sized "
                            f"table can be committed there: {why}")
    assert "S3 through S3A with conditional writes (docs/storage.md)" in check.fix


def test_an_unwritable_local_warehouse_names_the_path_the_error_and_the_profile_fix():
    check = warehouse_check(WAREHOUSE, "Permission denied", remote=False)
    assert check.failed
    assert check.detail == f"cannot write to {WAREHOUSE} (spark.sql.warehouse.dir): " \
                           "Permission denied"
    assert "spark.sql.warehouse.dir in the profile's server_side_parameters" in check.fix
    assert ".spark/warehouse" in check.fix


def test_an_unwritable_server_warehouse_points_at_the_server():
    # over Connect the server writes the tables: the profile cannot fix it
    check = warehouse_check(WAREHOUSE, "Permission denied", remote=True)
    assert check.detail == (f"cannot write to {WAREHOUSE} (spark.sql.warehouse.dir, on the "
                            "server): Permission denied")
    assert "server's user" in check.fix and "--conf spark.sql.warehouse.dir=" in check.fix
    assert "profile" not in check.fix


def test_a_metastore_that_answers_passes():
    assert metastore_check("the embedded Derby metastore /p/.spark/metastore_db", None,
                           derby=True).status == OK


def test_a_derby_metastore_held_by_another_process_says_to_wait_or_share():
    check = metastore_check("the embedded Derby metastore /p/.spark/metastore_db",
                            "another process has it open (Derby's XSDB6)", derby=True)
    assert check.detail == ("cannot open the embedded Derby metastore /p/.spark/metastore_db:"
                            " another process has it open (Derby's XSDB6)")
    assert "One process at a time" in check.fix
    assert "spark.hadoop.hive.metastore.uris" in check.fix


def test_a_metastore_service_down_says_to_check_the_service():
    check = metastore_check("the Hive metastore service at thrift://m:9083",
                            "Connection refused", derby=False)
    assert check.failed
    assert check.fix.startswith("Check that the metastore service runs")


@pytest.mark.parametrize("text, cause", [
    (REFUSED, "Connection refused"),
    ('details = "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:1: '
     'connection attempt timed out before receiving SETTINGS frame"',
     "connection attempt timed out before receiving SETTINGS frame"),
    ("Deadline Exceeded\nmore lines", "Deadline Exceeded"),  # no details: the first line
    ("", "no answer"),
    (None, "no answer"),
])
def test_the_grpc_cause_is_the_last_part_of_its_details(text, cause):
    assert grpc_cause(text) == cause


def test_a_server_gone_names_the_server_the_bound_and_the_ways_out():
    message = server_gone_message(ConnectBound("sc://127.0.0.1:15999", 2.0, 1),
                                  "Connection refused")
    assert message.startswith("the Spark Connect server at sc://127.0.0.1:15999 does not "
                              "answer (Connection refused; 2 attempts, 2 s each: "
                              "connect_timeout 2, connect_retries 1). ")
    assert "Start the server" in message and "check `host` in profiles.yml" in message
    assert "raise connect_timeout or connect_retries" in message


def test_a_server_gone_without_retries_says_within_the_timeout():
    message = server_gone_message(ConnectBound("sc://h:15002", 10.0, 0), "no answer")
    assert "(no answer; within 10 s: connect_timeout 10, connect_retries 0)" in message


def test_a_restarted_server_says_to_run_again():
    message = session_ended_message("sc://h:15002")
    assert message.startswith("the Spark Connect server at sc://h:15002 no longer knows this "
                              "client's session")
    assert message.endswith("run the command again")
