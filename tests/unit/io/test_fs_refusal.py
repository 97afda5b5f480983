"""io/fs.filesystem_refusal: the refusals a user can act on (read-only, full, over quota,
permission denied), from Python's OSError and from the text of a Java IOException as
py4j, Spark's failed task, HDFS and a Connect server's extension give it; anything else
is no refusal (a bug surfaces as one)."""
import errno
import os

import pytest

from python_adapter.io.connect_client import RemoteError
from python_adapter.io.fs import filesystem_refusal

# the text of real failures, as they reached the engine (issue 61's adversarial pass and the
# functional tests): Spark's task on a full disk, Java's stream on a read-only or forbidden
# path, HDFS's permission check
SPARK_FULL = (
    "An error occurred while calling o1258.parquet.\n: org.apache.spark.SparkException: "
    "[TASK_WRITE_FAILED] Task failed while writing rows to file:/w/s.db/.sized/t/staging/"
    "20261202052402240/data. SQLSTATE: 58030\n\tat org.apache.spark.sql.errors.Query...\n"
    "Caused by: org.apache.hadoop.fs.FSError: java.io.IOException: No space left on device")
JAVA_READ_ONLY = "java.io.FileNotFoundException: /w/s.db/.sized/t/timeline/1.commit (Read-only file system)"
HDFS_DENIED = ("org.apache.hadoop.security.AccessControlException: Permission denied: user=bob, "
               "access=WRITE, inode=\"/user/hive/warehouse/t\":hdfs:supergroup:drwxr-xr-x")


@pytest.mark.parametrize("error,cause,path", [
    (Exception(SPARK_FULL), "no space is left on the device",
     "file:/w/s.db/.sized/t/staging/20261202052402240/data"),
    (Exception(JAVA_READ_ONLY), "the filesystem is read-only", "/w/s.db/.sized/t/timeline/1.commit"),
    (Exception(HDFS_DENIED), "permission denied", "/user/hive/warehouse/t"),
    (RemoteError("java.nio.file.AccessDeniedException", "/w/t/lock"), "permission denied", "/w/t/lock"),
    (OSError(errno.EROFS, os.strerror(errno.EROFS), "/w/t/lock"), "the filesystem is read-only",
     "/w/t/lock"),
    (OSError(errno.EDQUOT, os.strerror(errno.EDQUOT)), "the disk quota is exceeded", None),
])
def test_refusals_name_their_cause_and_path(error, cause, path):
    refusal = filesystem_refusal(error)
    assert refusal is not None and (refusal.cause, refusal.path) == (cause, path)


def test_a_refusal_is_found_in_the_chain_of_causes():
    try:
        try:
            os.rename("/nonexistent-dir-h9/a", "/nonexistent-dir-h9/b")
        except OSError as exc:
            raise IOError("rename refused: /a -> /b (No such file)") from exc
    except IOError as outer:
        assert filesystem_refusal(outer) is None  # not found is no refusal
    denied = OSError(errno.EACCES, os.strerror(errno.EACCES), "/w/t/x")
    wrapped = IOError("rename refused: /w/t/x -> /w/t/y (Permission denied)")
    wrapped.__cause__ = denied
    refusal = filesystem_refusal(wrapped)
    assert (refusal.cause, refusal.path) == ("permission denied", "/w/t/x")


def test_a_real_permission_error_of_this_machine():
    """/sys refuses new files even to root (where it is mounted as in containers)."""
    try:
        os.close(os.open("/sys/sized-spark-probe", os.O_CREAT | os.O_WRONLY))
    except OSError as exc:
        refusal = filesystem_refusal(exc)
        assert refusal is not None and refusal.path == "/sys/sized-spark-probe"
    else:
        os.remove("/sys/sized-spark-probe")
        pytest.skip("/sys takes new files here")


def test_other_errors_are_no_refusal():
    assert filesystem_refusal(ValueError("bad value")) is None
    assert filesystem_refusal(Exception("java.io.FileNotFoundException: /w/t/x")) is None
