"""Spark's JVM logging for a dbt run: quiet where the user cannot act on it.

At dbt's default log level a model prints its phases and one summary line. The embedded
Spark, left to its default configuration, prints Hive's "Updating partition stats fast" for
every partition a write registers, "HiveConf of name ... does not exist" at each start,
"Using an existing Spark session" for every statement dbt-spark runs, and a native-library
notice. The driver JVM is started with `log4j2.properties` beside this module instead,
unless the profile configures log4j itself.
"""
import os
from typing import Dict, Mapping

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
CONSOLE_PROGRESS = "spark.ui.showConsoleProgress"


def quiet_logging_confs(confs: Mapping[str, str]) -> Dict[str, str]:
    """Settings to add to a session's confs before its JVM starts: our log4j2 configuration
    (appended to the profile's driver options, unless they name a log4j configuration),
    and no console progress bars, which run into dbt's lines (unless the profile sets it)."""
    added = {}
    options = str(confs.get(JAVA_OPTIONS, "") or "")
    if "log4j" not in options:
        added[JAVA_OPTIONS] = f"{options} -Dlog4j2.configurationFile=file:{CONFIG}".strip()
    if CONSOLE_PROGRESS not in confs:
        added[CONSOLE_PROGRESS] = "false"
    return added
