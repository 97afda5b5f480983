"""py4j's error class, or a stand-in where pyspark runs without py4j (pyspark-client, a
Spark Connect client): code that catches it then never sees one."""
try:
    from py4j.protocol import Py4JJavaError
except ImportError:  # no JVM in this process
    class Py4JJavaError(Exception):  # type: ignore[no-redef]
        """Never raised: there is no py4j."""

__all__ = ["Py4JJavaError"]
