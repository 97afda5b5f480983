"""SizedSparkCredentials as dbt builds them from a profile (Profile._credentials_from_profile:
aliases, the JSON schema, then the dataclass): what `dbt debug` shows of each method
(connection_info: the fields the method reads, not dbt-spark's one list for all), and the
connect values refused before anything runs, each error naming the key and its value."""
import pytest
from dbt.config.profile import Profile
from dbt.exceptions import DbtProfileError

from dbt.adapters.sized_spark.credentials import SizedSparkCredentials

PYSPARK_MAJOR = int(__import__("pyspark").__version__.split(".")[0])
needs_connect = pytest.mark.skipif(PYSPARK_MAJOR < 4, reason="method: connect needs pyspark 4")
# what `dbt init` writes for method: session (dbt/include/sized_spark/profile_template.yml)
INIT_SESSION = {
    "spark.master": "local[*]",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.sql.warehouse.dir": ".spark/warehouse",
    "spark.hadoop.javax.jdo.option.ConnectionURL":
        "jdbc:derby:;databaseName=.spark/metastore_db;create=true",
    "spark.driver.extraJavaOptions": "-Dderby.system.home=.spark",
}
# fields other methods read, which mean nothing to a session or a Connect client
FOREIGN = {"port", "cluster", "organization", "endpoint", "driver", "user", "auth"}


def _creds(**fields):
    """The credentials of a profile's target, built as dbt builds them."""
    return Profile._credentials_from_profile({"type": "sized_spark", **fields}, "proj", "dev")


def _shown(creds):
    return dict(creds.connection_info())


def test_session_shows_its_method_schema_and_spark_settings_only():
    creds = _creds(method="session", host="localhost", schema="analytics",
                   server_side_parameters=INIT_SESSION)
    assert isinstance(creds, SizedSparkCredentials)
    assert _shown(creds) == {
        "method": "session",
        "schema": "analytics",
        "spark.master": "local[*]",
        "spark.sql.warehouse.dir": ".spark/warehouse",
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            "jdbc:derby:;databaseName=.spark/metastore_db;create=true",
    }


def test_session_shows_no_port_cluster_or_organization_even_when_set():
    # dbt-spark's list shows port 443 and empty cluster/organization for every method
    creds = _creds(method="session", host="localhost", schema="analytics", port=443,
                   cluster="c", organization="0")
    assert not FOREIGN & set(_shown(creds))
    assert "host" not in _shown(creds)


def test_session_settings_left_unset_show_what_spark_does_instead():
    shown = _shown(_creds(method="session", host="localhost", schema="analytics"))
    assert shown["spark.master"] == "local[*] (pyspark's default)"
    assert shown["spark.sql.warehouse.dir"] == ("spark-warehouse (Spark's default, in the "
                                                "directory dbt runs in)")
    assert shown["spark.hadoop.javax.jdo.option.ConnectionURL"] == (
        "metastore_db (an embedded Derby, in the directory dbt runs in)")
    # a metastore service has no default: shown only when set
    assert "spark.hadoop.hive.metastore.uris" not in shown


def test_session_shows_a_metastore_service_when_set():
    shown = _shown(_creds(method="session", host="localhost", schema="analytics",
                          server_side_parameters={
                              "spark.hadoop.hive.metastore.uris": "thrift://meta:9083"}))
    assert shown["spark.hadoop.hive.metastore.uris"] == "thrift://meta:9083"


def test_the_shown_keys_are_the_same_with_aliases():
    # dbt debug asks with_aliases=True
    creds = _creds(method="session", host="localhost", schema="analytics",
                   server_side_parameters=INIT_SESSION)
    assert dict(creds.connection_info(with_aliases=True)) == _shown(creds)


@needs_connect
def test_connect_shows_the_server_and_its_bound():
    creds = _creds(method="connect", host="sc://127.0.0.1:15002", schema="analytics",
                   connect_timeout=2, connect_retries=1, port=443, cluster="c")
    assert list(creds.connection_info()) == [
        ("method", "connect"), ("host", "sc://127.0.0.1:15002"), ("schema", "analytics"),
        ("connect_timeout", 2), ("connect_retries", 1)]


@needs_connect
def test_connect_shows_dbt_sparks_defaults_of_the_bound():
    shown = _shown(_creds(method="connect", host="sc://h:15002", schema="analytics"))
    assert (shown["connect_timeout"], shown["connect_retries"]) == (10, 0)


def test_a_remote_method_keeps_its_own_fields():
    shown = _shown(_creds(method="http", host="https://spark.example.com", port=443,
                          token="t", cluster="c", organization="0", schema="analytics"))
    assert {"host", "port", "cluster", "organization"} <= set(shown)
    assert "token" not in shown  # a secret is never shown


@needs_connect
@pytest.mark.parametrize("fields, said", [
    ({"host": "spark.internal:15002"}, "got host: 'spark.internal:15002'"),
    ({"host": "http://spark.internal:15002"}, "got host: 'http://spark.internal:15002'"),
    ({"connect_timeout": -1}, "got connect_timeout: -1"),
    ({"connect_timeout": 0}, "got connect_timeout: 0"),
    ({"connect_retries": -1}, "got connect_retries: -1"),
])
def test_bad_connect_values_are_refused_naming_the_key_and_the_value(fields, said):
    profile = {"method": "connect", "host": "sc://spark.internal:15002", "schema": "a", **fields}
    with pytest.raises(DbtProfileError) as err:
        _creds(**profile)
    message = str(err.value)
    assert 'Credentials in profile "proj", target "dev" invalid' in message
    assert said in message
    key = said.split()[1].rstrip(":")
    # the error says what the key is for, not only that it is wrong
    assert {"host": "needs `host` to be a Spark Connect URL such as sc://",
            "connect_timeout": "connect_timeout must be a positive number of seconds",
            "connect_retries": "connect_retries must be 0 or more"}[key] in message


@needs_connect
@pytest.mark.parametrize("fields", [{"connect_timeout": "10"}, {"connect_retries": True}])
def test_values_of_the_wrong_type_are_refused_by_the_schema(fields):
    with pytest.raises(DbtProfileError, match=f"{next(iter(fields.values()))!r} is not of "
                                              f"type 'integer'"):
        _creds(method="connect", host="sc://h:15002", schema="a", **fields)


def test_the_bound_is_checked_for_method_connect_only():
    # a session never reads connect_timeout: a leftover value must not fail its profile
    _creds(method="session", host="localhost", schema="a", connect_timeout=-1)
